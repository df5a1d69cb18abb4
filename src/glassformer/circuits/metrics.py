"""Metrics for ablation and patching: a function of a model's output that says how much of a
behaviour is left. An indirect-object study (Wang et al. (2022), "Interpretability in the
Wild") measures the logit difference between the right answer and the wrong one,

    metric(out) = mean_b ( logits[b, n_b, right_b] - logits[b, n_b, wrong_b] ),

at the position n_b that predicts the answer (the last, by default), averaged over the prompts.
``logit_difference`` builds it from the answers as strings or ids, one pair for every prompt
or (``per_prompt=True``) one pair per prompt, so a study passes answers, not a hand-written
function; ``reduce="none"`` keeps one value per prompt (B,), and a patching grid then has a
first axis of prompts.

A metric that reads the logits at one position per prompt says so, and the patching grids
then compute the logits there alone: ``metric.read_positions(batch, length)`` gives the
positions (B,) and ``metric.from_logits(logits)`` the value from the logits there (B, N_V);
``logit_difference``'s metric has both. A metric without them (any function of the output)
gets the whole output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .attribution import _ids, _positions, refuse_ambiguous

__all__ = ["logit_difference"]

Answer = int | str | Sequence[int | str] | Tensor


def logit_difference(
    model: Any,
    right: Answer,
    wrong: Answer,
    *,
    position: int | Sequence[int] = -1,
    tokenizer: Any = None,
    per_prompt: bool = False,
    reduce: str = "mean",
) -> Callable[[Any], Tensor]:
    """The metric ``out -> mean over the batch of logits[right] - logits[wrong]`` at
    ``position``, for ``patch_residual``, ``patch_heads``, ``patch_blocks``, ``patch_path`` and
    ``normalized``.

    Args:
        model: the model whose output the metric reads (its ``unembed`` gives the vocabulary,
            its tokenizer reads string answers).
        right: the answer whose logit counts up: a token (an id, or a string that is one token)
            for every prompt, or with ``per_prompt=True`` a list with one per prompt.
        wrong: the answer whose logit counts down, in the same forms.
        position: the position whose logits are read: an int for every prompt (negative from
            the end; -1 the last) or one per prompt (the end of each prompt when a batch is
            right-padded).
        tokenizer: reads string answers; default the model's own (``model.tokenizer``).
        per_prompt: True reads a list in ``right`` or ``wrong`` as one answer per prompt;
            without it a list is refused (TransformerLens reads a list of targets as tokens
            shared by every prompt).

    Returns:
        A function of the model's output (anything with ``.logits`` of shape (B, T, N_V)) that
        gives a 0-d tensor ((B,) with ``reduce="none"``), with ``read_positions`` and
        ``from_logits`` (the module docstring).

    Raises:
        ValueError: a list of answers without ``per_prompt=True``, an unknown ``reduce``;
            when called, an answer
            that is not one token, a list whose length is not the batch's, or a position
            outside the sequence.
    """
    vocab = model.unembed.proj.out_features
    tokenizer = getattr(model, "tokenizer", None) if tokenizer is None else tokenizer
    what = "logit_difference"
    refuse_ambiguous(right, per_prompt, what, "right")
    refuse_ambiguous(wrong, per_prompt, what, "wrong")

    if reduce not in REDUCTIONS:
        raise ValueError(f"logit_difference: reduce={reduce!r} is not known; choose one of "
                         f"{sorted(REDUCTIONS)}")  # fmt: skip

    def read_positions(b: int, t: int) -> Tensor:
        return _positions(position, b, t, what)  # (B,)

    def from_logits(final: Tensor) -> Tensor:  # (B, N_V) -> (), or (B,)
        b, rows = final.shape[0], torch.arange(final.shape[0])
        good = _ids(right, tokenizer, b, vocab, what, "right", per_prompt)
        bad = _ids(wrong, tokenizer, b, vocab, what, "wrong", per_prompt)
        return REDUCTIONS[reduce](final[rows, good] - final[rows, bad])

    def metric(out: Any) -> Tensor:
        logits = out.logits  # (B, T, N_V)
        b, t = logits.shape[:2]
        return from_logits(logits[torch.arange(b), read_positions(b, t)])  # (B, N_V)

    metric.read_positions, metric.from_logits = read_positions, from_logits
    return metric


REDUCTIONS = {"mean": lambda d: d.mean(), "sum": lambda d: d.sum(), "none": lambda d: d}
