"""The numbers of a trace, as a learner reads them: a few values of every tensor, the last
token's attention row in every head, and what the model predicts.

Each tensor is shown at the last position of the first example (head 0 of a per-head
tensor): ``X[0, -1, :4] = [...]``, the index written as Python would write it. The softmax
step shows the whole row A[0, h, -1] of every head (the last query's weights over the keys,
Eq. 3; long rows by their two ends). The prediction is p = softmax(logits) of the row that
predicts: the next token (DecoderLM, EncoderDecoder), each <MASK> (EncoderMLM), the class
(EncoderClassifier, DecoderClassifier).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..models import DecoderLM, EncoderDecoder, EncoderMLM
from ..models.heads import ClassificationHead
from ..models.tokens import drop_undefined_ids
from .steps import Step

__all__ = ["format_prediction", "format_values"]

FIRST = 4  # values shown of a tensor's row
ROW = 12  # attention weights shown of a row (more: the first and last ROW // 2)
TOP = 3  # predictions shown, likeliest first
NO_BATCH = ("mask", "cos", "sin")  # 2-D tensors (T, ·) without a batch dimension


def format_values(step: Step) -> list[str]:
    """Lines ``name[index] = [v, ...]``: a few values of each tensor of ``step``."""
    if step.name == "softmax":
        a = step.tensors["A"]  # (B, H, T, S)
        return [f"A[0, {h}, -1] = {_numbers(a[0, h, -1], ROW)}" for h in range(a.shape[1])]
    lines = []
    for name, t in step.tensors.items():
        index = _last_row(name, t)
        n = FIRST if t.dtype != torch.bool else ROW
        cut = f", :{n}" if t.shape[-1] > n else ""
        where = ", ".join(str(i) for i in index) + cut
        lines.append(f"{name}[{where}] = {_numbers(t[index], n, cut=True)}")
    return lines


def format_prediction(model, logits: Tensor, input_ids: Tensor, tokenizer) -> list[str]:
    """What the model predicts from the trace's last value ``logits`` (example 0), with
    p = softmax(logits): the likeliest tokens or classes, or nothing for an EncoderModel."""
    if isinstance(model, ClassificationHead):
        labels = model.class_names()
        return [f"class: p = softmax(logits[0]) = {_top(logits[0], lambda i: repr(labels[i]))}"]
    if isinstance(model, DecoderLM | EncoderDecoder):
        show = _token_names(tokenizer)
        where = "decoder input" if isinstance(model, EncoderDecoder) else "input"
        top = _top(logits[0, -1], show, tokenizer)
        return [f"next token after the {where}: p = softmax(logits[0, -1]) = {top}"]
    if isinstance(model, EncoderMLM):
        show = _token_names(tokenizer)
        masks = (input_ids[0] == tokenizer.mask_id).nonzero().flatten().tolist()
        if not masks:
            return ["no <MASK> in the text: write <MASK> where a token is to be predicted"]
        return [
            f"<MASK> at {n}: p = softmax(logits[0, {n}]) = {_top(logits[0, n], show, tokenizer)}"
            for n in masks
        ]
    return []


def _last_row(name: str, t: Tensor) -> tuple[int, ...]:
    """The index of the last position's row: example 0, head 0, position -1."""
    if t.dim() <= 1:
        return ()
    if t.dim() == 2:
        return (-1,) if name in NO_BATCH else (0,)  # (T, ·) or (B, C)
    return (0,) * (t.dim() - 2) + (-1,)


def _numbers(row: Tensor, n: int, cut: bool = False) -> str:
    """``[v, ...]``: the first n values (``cut``), or all of them when at most n, else the
    first and last n // 2 around ``…``."""
    values = row.reshape(-1).tolist()
    if cut:
        values = values[:n]
    elif len(values) > n:
        values = [*values[: n // 2], ..., *values[-(n // 2) :]]
    return "[" + ", ".join(_number(v) for v in values) + "]"


def _number(v) -> str:
    if v is ...:
        return "…"
    if isinstance(v, bool):
        return str(int(v))
    return f"{v:.4g}"


def _top(logits: Tensor, name, tokenizer=None) -> str:
    """The likeliest entries of p = softmax(logits), never an id the tokenizer does not
    define (a model's padding rows)."""
    p = drop_undefined_ids(torch.softmax(logits.double(), dim=-1), tokenizer, 0.0)
    values, ids = p.topk(min(TOP, p.numel()))
    return ", ".join(
        f"{name(i)} {v:.4f}" for v, i in zip(values.tolist(), ids.tolist(), strict=True)
    )


def _token_names(tokenizer):
    if tokenizer is None:
        return str
    return lambda i: repr(tokenizer.id_to_token(i))
