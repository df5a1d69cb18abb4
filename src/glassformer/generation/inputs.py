"""Prompts of different lengths -> one padded (B, T) batch and its attention mask.

A DecoderLM's prompts are padded on the left: the last column is every prompt's last token, so
the token generated next is the same column for all of them, and ``positions_from_mask`` gives
the padded prompt the positions 0, 1, ... it would have alone. An EncoderDecoder's sources are
padded on the right (the encoder numbers positions from the first column).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["check_ids", "check_text", "pad_prompts"]


def pad_prompts(
    inputs: Tensor | Sequence[int] | Sequence[Sequence[int]],
    attention_mask: Tensor | None,
    pad_id: int,
    *,
    left: bool,
) -> tuple[Tensor, Tensor | None]:
    """(ids (B, T) long, mask (B, T) long or None when nothing is padded)."""
    if isinstance(inputs, Tensor):
        ids = inputs[None] if inputs.dim() == 1 else inputs
        if ids.dim() != 2 or ids.dtype not in (torch.long, torch.int, torch.int16, torch.uint8):
            raise ValueError(
                f"inputs: a tensor of token ids must be (T,) or (B, T) integers, got shape "
                f"{tuple(inputs.shape)} dtype {inputs.dtype}"
            )
        if attention_mask is not None:
            mask = attention_mask[None] if attention_mask.dim() == 1 else attention_mask
            if mask.shape != ids.shape:
                raise ValueError(
                    f"attention_mask has shape {tuple(attention_mask.shape)}, inputs "
                    f"{tuple(inputs.shape)}: allowed the same shape"
                )
            attention_mask = mask.long()
        _check_nonempty(ids.shape[1])
        return ids.long(), attention_mask
    if attention_mask is not None:
        raise ValueError(
            "attention_mask is only allowed with a tensor of ids (lists are padded here)"
        )
    rows = _rows(inputs)
    width = max(len(r) for r in rows)
    _check_nonempty(min(len(r) for r in rows))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        cols = slice(width - len(r), width) if left else slice(0, len(r))
        ids[i, cols] = torch.tensor(r, dtype=torch.long)
        mask[i, cols] = 1
    return ids, (None if bool(mask.all()) else mask)


def _rows(inputs) -> list[list[int]]:
    if not isinstance(inputs, Sequence) or isinstance(inputs, str | bytes) or not inputs:
        raise ValueError(
            f"inputs must be token ids: a (B, T) tensor, a list of ids or a list of lists of "
            f"ids, got {type(inputs).__name__}"
        )
    rows = [inputs] if all(isinstance(i, int) for i in inputs) else inputs
    out = []
    for r in rows:
        if isinstance(r, Tensor):
            r = r.tolist()
        if not isinstance(r, Sequence) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in r
        ):
            raise ValueError(f"inputs: every prompt must be a list of int ids, got {r!r:.60}")
        out.append(list(r))
    return out


def _check_nonempty(n: int) -> None:
    if n < 1:
        raise ValueError("inputs: a prompt is empty; allowed at least one token (e.g. <BOS>)")


def check_ids(ids: Tensor, vocab_size: int, what: str) -> None:
    """ValueError unless every id is in [0, vocab_size)."""
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(f"{what}: token id {bad} is out of range: allowed 0 .. {vocab_size - 1}")


def check_text(text: str, what: str) -> str:
    """``text``, unless it is empty or only whitespace: then a ValueError naming ``what``.
    The one rule of every place that runs a model on a user's text (``predict``, the
    explorer), as of the training files, where a blank text is refused too."""
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        blank = " (only whitespace)" if text else ""
        raise ValueError(f"{what} is empty{blank}: give the model some text to read")
    return text
