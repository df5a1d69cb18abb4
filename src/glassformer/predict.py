"""Prediction for the encoder tasks (ETransformer with a task head: Algorithm 9 of
Phuong & Hutter, "Formal Algorithms for Transformers" (2022)).

* ``classify``: P(class | text) = softmax(logits) of the classification head; the label is the
  argmax, reported with its probability and the whole distribution.
* ``fill_mask``: at every <MASK> position n the masked-LM head gives P(x[n] = w | the rest)
  = softmax(W_u h_n) (ETraining's objective); the top-k tokens are the candidates.

Texts are encoded as in training: <BOS> ids <EOS> (``add_bos``), padded on the right and run in
batches of ``batch_size``. Both run in eval mode under torch.inference_mode. An empty (or blank)
text is refused, as the explorer refuses it; a text longer than max_len is refused, or cut by
``classify(..., truncate=True)`` (a masked LM's text is never cut: a <MASK> could be lost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor

from .fast import fast_paths
from .generation.decoding import eval_mode
from .generation.inputs import check_ids, check_text, pad_prompts
from .models import EncoderClassifier, EncoderMLM
from .models.heads import ClassificationHead
from .models.tokens import drop_undefined_ids

__all__ = [
    "Candidate",
    "Classification",
    "InputTooLong",
    "MaskPrediction",
    "classify",
    "fill_mask",
]


class InputTooLong(ValueError):
    """An input with more tokens than the model's max_len: which one (``index``), its
    ``tokens`` and the ``max_len``, for a caller that words the remedy its own way."""

    def __init__(self, message: str, index: int, tokens: int, max_len: int) -> None:
        super().__init__(message)
        self.index, self.tokens, self.max_len = index, tokens, max_len


@dataclass
class Classification:
    """The predicted class of one input: its name, index, probability, and every class's."""

    label: str
    index: int
    probability: float
    probabilities: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Candidate:
    token_id: int
    token: str  # the token decoded on its own
    probability: float


@dataclass
class MaskPrediction:
    """The top-k candidates for the <MASK> at ``position`` (an index into the encoded ids)."""

    position: int
    candidates: list[Candidate]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classify(
    model: EncoderClassifier,
    inputs: str | Sequence[str] | Sequence[Sequence[int]] | Tensor,
    *,
    tokenizer=None,
    labels: Sequence[str] | None = None,
    add_bos: bool = True,
    truncate: bool = False,
    batch_size: int = 64,
) -> list[Classification]:
    """One Classification per input (texts, need a tokenizer, or lists of ids).

    labels: the class names, default the model's (``class_names()``: its
    ``config.extra["labels"]``, else "0", "1", ...)."""
    if not isinstance(model, ClassificationHead):
        raise ValueError(
            f"classify needs an EncoderClassifier or DecoderClassifier, got {type(model).__name__}"
        )
    n_classes = model.config.n_classes
    names = model.class_names() if labels is None else [str(n) for n in labels]
    if len(names) != n_classes:
        raise ValueError(
            f"labels has {len(names)} names but the model has n_classes={n_classes}: allowed "
            f"exactly {n_classes}"
        )
    rows = _encode(model, inputs, tokenizer, add_bos, truncate, allow_special=False)
    results = []
    for logits, _ in _run(model, rows, batch_size, model.config.pad_id):
        probs = logits.float().softmax(dim=-1)  # (b, n_classes)
        for p in probs.tolist():
            k = max(range(n_classes), key=p.__getitem__)
            dist = dict(zip(names, p, strict=True))
            results.append(Classification(names[k], k, p[k], dist))
    return results


def fill_mask(
    model: EncoderMLM,
    tokenizer,
    texts: str | Sequence[str],
    *,
    top_k: int = 5,
    add_bos: bool = True,
    exclude_special: bool = True,
    batch_size: int = 64,
) -> list[MaskPrediction] | list[list[MaskPrediction]]:
    """The top-k candidates of every <MASK> in each text (written literally, "<MASK>").

    A single text gives its list of MaskPrediction (one per <MASK>, left to right); a list
    of texts gives one such list per text. ``exclude_special`` leaves special tokens
    (<PAD>, <BOS>, <MASK>, ...) out of the candidates; a model's rows past the ids the
    tokenizer defines (padding rows) are never candidates."""
    if not isinstance(model, EncoderMLM):
        raise ValueError(f"fill_mask needs an EncoderMLM, got {type(model).__name__}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k={top_k!r} is not allowed: an int >= 1")
    single = isinstance(texts, str)
    texts = [texts] if single else list(texts)
    rows = _encode(model, texts, tokenizer, add_bos, None, allow_special=True)
    mask_id = tokenizer.mask_id
    for text, row in zip(texts, rows, strict=True):
        if mask_id not in row:
            raise ValueError(f"text {text!r:.60} has no <MASK>: allowed texts with at least one")
    special = sorted(i for i in tokenizer.special_ids if i < model.config.vocab_size)
    defined = min(tokenizer.file_vocab_size, model.config.vocab_size)  # ids it can spell
    k = min(top_k, defined - (sum(i < defined for i in special) if exclude_special else 0))
    results: list[list[MaskPrediction]] = []
    for logits, start in _run(model, rows, batch_size, model.config.pad_id):
        logits = drop_undefined_ids(logits.float(), tokenizer)  # (b, T, N_V)
        if exclude_special:
            logits[..., special] = float("-inf")
        probs = logits.softmax(dim=-1)
        for r, row in enumerate(rows[start : start + logits.shape[0]]):
            preds = []
            for pos in (n for n, i in enumerate(row) if i == mask_id):
                p, idx = probs[r, pos].topk(k)
                cands = [
                    Candidate(i, tokenizer.decode([i]), q)
                    for i, q in zip(idx.tolist(), p.tolist(), strict=True)
                ]
                preds.append(MaskPrediction(pos, cands))
            results.append(preds)
    return results[0] if single else results


def _encode(model, inputs, tokenizer, add_bos, truncate, *, allow_special) -> list[list[int]]:
    """Texts or id lists -> id lists that fit max_len; ``truncate`` None: never cut."""
    single = isinstance(inputs, str)
    if isinstance(inputs, Tensor):
        inputs = [inputs.tolist()] if inputs.dim() == 1 else inputs.tolist()
    elif single:
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs is empty: allowed at least one text or list of ids")
    if all(isinstance(x, str) for x in inputs):
        if tokenizer is None:
            raise ValueError("texts need a tokenizer: pass tokenizer=...")
        for i, text in enumerate(inputs):
            check_text(text, "the text" if single else f"inputs[{i}]")
        rows = [
            tokenizer.encode(t, add_bos=add_bos, add_eos=True, allowed_special=allow_special)
            for t in inputs
        ]
        eos = tokenizer.eos_id
    else:
        rows, eos = [list(r) for r in inputs], None
    max_len = model.config.max_len
    for i, r in enumerate(rows):
        if len(r) > max_len:
            if not truncate:
                remedy = "shorten it" + (
                    " (a masked LM reads the whole text)" if truncate is None else ""
                )
                if truncate is False:
                    remedy += f" or pass truncate=True (cuts it to {max_len} tokens)"
                raise InputTooLong(
                    f"{'the text' if single else f'inputs[{i}]'} has {len(r)} tokens but the "
                    f"model's max_len is {max_len}: {remedy}",
                    i,
                    len(r),
                    max_len,
                )
            rows[i] = [*r[: max_len - 1], eos] if eos is not None else r[:max_len]
    return rows


def _run(model, rows: list[list[int]], batch_size: int, pad_id: int):
    """Yield (logits, index of the batch's first row) for right-padded batches of ``rows``."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} is not allowed: an int >= 1")
    device = next(model.parameters()).device
    with eval_mode(model), fast_paths(model), torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            ids, mask = pad_prompts(rows[start : start + batch_size], None, pad_id, left=False)
            check_ids(ids, model.config.vocab_size, "inputs")
            ids = ids.to(device)
            mask = None if mask is None else mask.to(device)
            yield model(ids, mask).logits, start
