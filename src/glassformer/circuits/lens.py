"""The logit lens: the residual stream after each block read as if it were the final one.

Every block adds its terms to one stream ("Brief Notes on Transformers": x1 = H(x0) + x0,
x2 = MLP(x1) + x1) that the output layer reads at the end ("... we apply an unembedding
transformation to produce logits"). Reading the stream after block l through the same final
norm and output layer shows which tokens it already points to: per layer, the top-k tokens and
their probabilities. The last layer's reading is the model's own prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..models.encoder import EncoderModel
from ..models.heads import LMHead
from ..models.hooked import ActivationCache
from .cached import model_of
from .stream import NORM_MODES, accumulated_resid

__all__ = ["LogitLens", "logit_lens"]


@dataclass(eq=False)
class LogitLens:
    """Top-k readings of each layer's stream: ``ids`` and ``probs`` (layers, B, k) at one
    position, or (layers, B, T, k) at every position; ``labels`` ``"embed"``, ``"L0"``, ...
    (the stream entering block 0, after block 0, ...), as accumulated_resid's."""

    labels: list[str]
    ids: Tensor
    probs: Tensor
    position: int | None

    def table(self, tokenizer=None, *, batch: int = 0, position: int = -1) -> list[list[str]]:
        """Rows of strings: a header, then one row per layer, ``[label, "'tok' 0.42", ...]``
        for batch row ``batch`` (and ``position``, when the lens read every position). A
        token is shown as ``repr(tokenizer.decode([id]))``, or its id without a tokenizer."""
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
) -> LogitLens:
    """Each layer's stream (accumulated_resid) through the final norm and the output layer:
    the ``k`` most likely tokens and their probabilities, at ``position`` (None: every one).

    norm: ``"recompute"`` normalises each layer's stream by its own statistics, as the model
    normalises its final stream (nostalgebraist's logit lens); ``"frozen"`` uses the final
    stream's scale for every layer (TransformerLens's ``accumulated_resid(apply_ln=True)``).
    A post-norm stack has no final norm: its streams are read as they are. The model's output
    layer is applied as it is (BERT's MLM transform included), so any model with an
    unembedding can be read: a DecoderLM, an EncoderMLM, an EncoderDecoder's decoder."""
    what = "logit_lens"
    model = model_of(cache, what)
    if norm not in NORM_MODES[1:]:
        raise ValueError(f"{what}: norm={norm!r}; allowed: {NORM_MODES[1:]}")
    if not isinstance(model, LMHead):
        raise ValueError(
            f"{what}: a {type(model).__name__} has no unembedding to read the stream through; "
            "allowed: a DecoderLM, an EncoderMLM, an EncoderDecoder"
        )
    if (
        isinstance(k, bool)
        or not isinstance(k, int)
        or not 1 <= k <= model.unembed.proj.out_features
    ):
        raise ValueError(f"{what}: k={k!r}; allowed: 1..{model.unembed.proj.out_features}")
    stack = "encoder" if isinstance(model, EncoderModel) else "decoder"
    streams = accumulated_resid(cache, stack=stack, norm=norm)  # (L + 1, B, T, C)
    x = streams.values
    if position is not None:
        t = x.shape[2]
        if isinstance(position, bool) or not isinstance(position, int) or not -t <= position < t:
            raise ValueError(
                f"{what}: position={position!r}; allowed: an int in {-t}..{t - 1} or None"
            )
        x = x[:, :, position]  # (L + 1, B, C)
    with torch.no_grad():
        probs = model.lm_logits(x).float().softmax(-1)  # (L + 1, B, [T,] V)
    top = probs.topk(k, dim=-1)
    return LogitLens(streams.labels, top.indices, top.values, position)


def _token(i: int, tokenizer) -> str:
    return str(i) if tokenizer is None else repr(tokenizer.decode([i]))
