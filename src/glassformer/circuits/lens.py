"""The logit lens: the residual stream after each block read as if it were the final one.

Every block adds its terms to one stream ("Brief Notes on Transformers": x1 = H(x0) + x0,
x2 = MLP(x1) + x1) that the output layer reads at the end ("... we apply an unembedding
transformation to produce logits"). Reading the stream after block l through the same final
norm and output layer shows which tokens it already points to: per layer, the top-k tokens and
their probabilities, the full logits (or log-probabilities, probabilities), or the logit of
chosen tokens (one, or the difference of a pair: " Mary" against " John"). The last layer's
reading is the model's own prediction.

TransformerLens's ``cache.logit_lens(targets=..., return_type=...)`` (and the older
``accumulated_resid(apply_ln=True)`` + unembedding) reads the stream the same way as
``norm="recompute"``, the default. TransformerLens reads a list of targets as tokens shared by
every prompt; here one token per prompt is asked for with ``per_prompt=True`` and a list
without it is refused, and a pair is a difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..models.encoder import EncoderModel
from ..models.heads import LMHead
from ..models.hooked import ActivationCache
from ..models.tokens import drop_undefined_ids
from .attribution import _token_pair, refuse_ambiguous
from .cached import model_of
from .stream import NORM_MODES, accumulated_resid

__all__ = ["RETURN_TYPES", "LogitLens", "logit_lens"]

RETURN_TYPES = ("top_k", "logits", "log_probs", "probs")


@dataclass(eq=False)
class LogitLens:
    """Each layer's reading; ``labels`` ``"embed"``, ``"L0"``, ... (the stream entering block
    0, after block 0, ...), as accumulated_resid's; ``position`` the position read (None:
    every one, a T axis after B).

    ``return_type="top_k"``: ``ids`` and ``probs`` (layers, B, [T,] k), the k most likely
    tokens; ``values`` is ``probs``. ``"logits"``, ``"log_probs"``, ``"probs"``: ``values``
    (layers, B, [T,] V), or with ``targets`` (layers, B, [T]): the value at the target (its
    difference over the pair), ``target_ids`` the (B,) ids (a pair: two)."""

    labels: list[str]
    ids: Tensor | None
    probs: Tensor | None
    position: int | None
    values: Tensor | None = None
    return_type: str = "top_k"
    target_ids: tuple[Tensor, ...] | None = None
    tokenizer: Any = None

    def table(self, tokenizer=None, *, batch: int = 0, position: int = -1) -> list[list[str]]:
        """Rows of strings (``return_type="top_k"``): a header, then one row per layer,
        ``[label, "'tok' 0.42", ...]`` for batch row ``batch`` (and ``position``, when the lens
        read every position). A token is shown as ``repr(tokenizer.decode([id]))`` (default:
        the model's tokenizer), or its id without a tokenizer."""
        if self.ids is None or self.probs is None:
            raise ValueError(
                f"LogitLens.table: the lens read {self.return_type!r}; a table shows the top "
                "k tokens: call logit_lens(cache, k=...) without targets and return_type"
            )
        tokenizer = self.tokenizer if tokenizer is None else tokenizer
        ids, probs = self.ids[:, batch], self.probs[:, batch]
        if self.position is None:
            ids, probs = ids[:, position], probs[:, position]
        k = ids.shape[-1]
        rows = [["layer"] + [f"top {i + 1}" for i in range(k)]]
        for label, row_ids, row_probs in zip(
            self.labels, ids.tolist(), probs.tolist(), strict=True
        ):
            cells = [
                f"{_token(i, tokenizer)} {p:.3f}" for i, p in zip(row_ids, row_probs, strict=True)
            ]
            rows.append([label, *cells])
        return rows


def logit_lens(
    cache: ActivationCache,
    *,
    k: int = 5,
    position: int | None = None,
    norm: str = "recompute",
    targets: Any = None,
    return_type: str | None = None,
    tokenizer: Any = None,
    per_prompt: bool = False,
) -> LogitLens:
    """Each layer's stream (accumulated_resid) through the final norm and the output layer,
    at ``position`` (None: every one).

    return_type: ``"top_k"`` (the default without ``targets``): the ``k`` most likely tokens
        and their probabilities; ``"logits"`` (the default with ``targets``), ``"log_probs"``,
        ``"probs"``: that quantity over the whole vocabulary, or at ``targets``.
    targets: one token, or a pair ``(token, other)`` for the difference of the two; each an
        id or a string that is one token under ``tokenizer`` (default: the model's), the same
        for every prompt; with ``per_prompt=True`` also a list or (B,) tensor of them, one
        per prompt (batch row), as ``logit_attribution``'s ``tokens``.
    per_prompt: True reads a list or tensor in ``targets`` as one token per prompt; without
        it one is refused (TransformerLens's ``targets=[...]`` are tokens shared by every
        prompt: here one call per token).
    norm: ``"recompute"`` normalises each layer's stream by its own statistics, as the model
        normalises its final stream (nostalgebraist's logit lens; TransformerLens's
        ``cache.logit_lens`` and ``accumulated_resid(apply_ln=True)``, which recompute the
        norm for each layer too); ``"frozen"`` uses the final stream's scale for every layer
        (TransformerLens's ``apply_ln_to_stack`` with the cached scale; the two differ by
        several logits in the early layers). A post-norm stack has no final norm: its streams
        are read as they are. The model's output layer is applied as it is (BERT's MLM
        transform included), so any model with an unembedding can be read: a DecoderLM, an
        EncoderMLM, an EncoderDecoder's decoder."""
    what = "logit_lens"
    refuse_ambiguous(targets, per_prompt, what, "targets")
    model = model_of(cache, what)
    if norm not in NORM_MODES[1:]:
        raise ValueError(f"{what}: norm={norm!r}; allowed: {NORM_MODES[1:]}")
    if not isinstance(model, LMHead):
        raise ValueError(
            f"{what}: a {type(model).__name__} has no unembedding to read the stream through; "
            "allowed: a DecoderLM, an EncoderMLM, an EncoderDecoder"
        )
    vocab = model.unembed.proj.out_features
    if return_type is None:
        return_type = "top_k" if targets is None else "logits"
    if return_type not in RETURN_TYPES:
        raise ValueError(f"{what}: return_type={return_type!r}; allowed: {RETURN_TYPES}")
    if return_type == "top_k" and targets is not None:
        raise ValueError(
            f"{what}: return_type='top_k' reads the k most likely tokens, not targets; with "
            "targets= choose 'logits', 'log_probs' or 'probs'"
        )
    if return_type == "top_k" and (
        isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= vocab
    ):
        raise ValueError(f"{what}: k={k!r}; allowed: 1..{vocab}")
    stack = "encoder" if isinstance(model, EncoderModel) else "decoder"
    streams = accumulated_resid(cache, stack=stack, norm=norm)  # (L + 1, B, T, C)
    x = streams.values
    b, t = x.shape[1:3]
    if position is not None:
        if isinstance(position, bool) or not isinstance(position, int) or not -t <= position < t:
            raise ValueError(
                f"{what}: position={position!r}; allowed: an int in {-t}..{t - 1} or None"
            )
        x = x[:, :, position]  # (L + 1, B, C)
    tok = getattr(model, "tokenizer", None)
    pair = None
    if targets is not None:
        chosen = tok if tokenizer is None else tokenizer
        pair = _token_pair(targets, chosen, b, vocab, what, "targets", per_prompt)
    with torch.no_grad():
        logits = model.lm_logits(x).float()  # (L + 1, B, [T,] V)
    if return_type == "top_k":
        top = drop_undefined_ids(logits.softmax(-1), tok, 0.0).topk(k, dim=-1)
        return LogitLens(
            streams.labels, top.indices, top.values, position, top.values, return_type, None, tok
        )
    if return_type != "logits":
        logits = logits.log_softmax(-1) if return_type == "log_probs" else logits.softmax(-1)
    if pair is None:
        return LogitLens(streams.labels, None, None, position, logits, return_type, None, tok)
    plus, minus = (None if ids is None else ids.to(logits.device) for ids in pair)
    values = _at(logits, plus) - (0 if minus is None else _at(logits, minus))
    ids = (plus,) if minus is None else (plus, minus)
    return LogitLens(streams.labels, None, None, position, values, return_type, ids, tok)


def _at(values: Tensor, ids: Tensor) -> Tensor:
    """values (L + 1, B, [T,] V) at one id per batch row, ids (B,): (L + 1, B, [T])."""
    index = ids.view(1, -1, *([1] * (values.dim() - 2))).expand(*values.shape[:-1], 1)
    return values.gather(-1, index)[..., 0]


def _token(i: int, tokenizer) -> str:
    return str(i) if tokenizer is None else repr(tokenizer.decode([i]))
