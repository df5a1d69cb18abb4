"""When a sequence is finished: at an <EOS> id, at a stop string, or after max_new_tokens.

Stop strings are checked on decoded text (a string may span several tokens, and one token may
hold it with more text around it), so they need the tokenizer. A finished sequence keeps the
token that finished it (the <EOS>, or the token completing the stop string); later steps give
it ``pad_id``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["FINISH_REASONS", "StopState", "cut_at_stop", "find_stop"]

FINISH_REASONS = ("eos", "stop_string", "length")


def find_stop(text: str, stop_strings: Sequence[str]) -> int:
    """The end index of the earliest stop string in ``text``, or -1 if none occurs."""
    best = -1
    for s in stop_strings:
        i = text.find(s)
        if i >= 0 and (best < 0 or i + len(s) < best):
            best = i + len(s)
    return best


def cut_at_stop(text: str, stop_strings: Sequence[str]) -> str:
    """``text`` up to and including its earliest stop string (all of it if none occurs)."""
    end = find_stop(text, stop_strings)
    return text if end < 0 else text[:end]


class StopState:
    """The finished rows of a batch of B sequences and why each finished."""

    def __init__(
        self,
        batch: int,
        eos_ids: tuple[int, ...],
        pad_id: int,
        device: torch.device,
        *,
        stop_strings: tuple[str, ...] = (),
        tokenizer=None,
    ) -> None:
        if stop_strings and tokenizer is None:
            raise ValueError(
                f"stop_strings={stop_strings!r} need a tokenizer to decode the text; "
                "pass tokenizer=... or use eos_id"
            )
        self.finished = torch.zeros(batch, dtype=torch.bool, device=device)  # (B,)
        self.reasons: list[str | None] = [None] * batch
        self.lengths: list[int | None] = [None] * batch  # tokens of a row when it finished
        self.n_steps = 0
        self.pad_id = pad_id
        self.any_finished = False
        self.all_finished = False
        self._eos = torch.tensor(eos_ids, dtype=torch.long, device=device) if eos_ids else None
        self._one_eos = eos_ids[0] if len(eos_ids) == 1 else None
        self.stop_strings = stop_strings
        self.tokenizer = tokenizer
        self.tokens: list[list[int]] = [[] for _ in range(batch)]  # kept for stop strings

    def update(self, tokens: Tensor) -> Tensor:
        """Next tokens (B,) -> the same with pad_id at rows finished before this step; marks
        the rows this step finishes."""
        self.n_steps += 1
        if self.any_finished:
            tokens = tokens.masked_fill(self.finished, self.pad_id)
        hit = None
        if self._eos is not None:
            hit = tokens == self._one_eos if self._one_eos is not None else self.eos_hits(tokens)
            hit = hit & ~self.finished
            if bool(hit.any()):
                for row in hit.nonzero().flatten().tolist():
                    self._finish(row, "eos")
                self._mark(hit)
        if self.stop_strings:
            self._check_strings(tokens.tolist())
        return tokens

    def eos_hits(self, tokens: Tensor) -> Tensor:
        """Which of ``tokens`` (any shape) are <EOS> ids."""
        if self._eos is None:
            return torch.zeros_like(tokens, dtype=torch.bool)
        return torch.isin(tokens, self._eos)

    def _check_strings(self, tokens: list[int]) -> None:
        hits = []
        for row, tok in enumerate(tokens):
            if self.reasons[row] is not None:
                continue
            self.tokens[row].append(tok)
            text = self.tokenizer.decode(self.tokens[row], skip_special=True)
            if find_stop(text, self.stop_strings) >= 0:
                self._finish(row, "stop_string")
                hits.append(row)
        if hits:
            mask = torch.zeros_like(self.finished)
            mask[hits] = True
            self._mark(mask)

    def _finish(self, row: int, reason: str) -> None:
        self.reasons[row] = reason
        self.lengths[row] = self.n_steps

    def _mark(self, rows: Tensor) -> None:
        self.finished |= rows
        self.any_finished = True
        self.all_finished = bool(self.finished.all())

    def finish_length(self) -> None:
        """The generation ran out of max_new_tokens: the unfinished rows end with "length"."""
        for row, reason in enumerate(self.reasons):
            if reason is None:
                self._finish(row, "length")
