"""The road to queries and keys ("Formal Algorithms for Transformers", "Self-Attention across
the sequence"): the three ways MultiHeadAttention scores a query token x against a key token x′, its
``attention_scores`` setting.

    "dot"       xᵀ x′               parameter-free: q = k = x, split into heads
    "shared"    xᵀ Uᵀ U x′          one projection U = W^{QK} for queries and keys: q = k = U x
    "separate"  xᵀ U_qᵀ U_k x′      separate projections W^Q, W^K (Eq. 4; the default): q · k′

Every setting scales the scores by 1/√d_k (Eq. 2) and keeps the values W^V and the output W^O.
``in_proj`` stacks the projections the setting has, by rows: [W^Q; W^K; W^V] ("separate"),
[W^{QK}; W^V] ("shared"), [W^V] ("dot"). With "dot", head i compares the i-th D = C / H
coordinates of the two tokens.

The notes' reason for the third step: with q = k the score matrix is symmetric (a token
cannot attend to another more than that one attends to it), and a token scores itself at least
as high as any key no longer than it (Cauchy–Schwarz: xᵀx′ <= |x| |x′| <= xᵀx when |x′| <= |x|):
with equal lengths its own position is every row's largest score; after a norm layer the
lengths are only about equal, so in most rows, not all. "shared" and "dot"
need as many key heads as query heads (no grouped-query attention: n_kv_head = n_head).
Cross-attention (Eq. 5) applies the same setting to x and the source z (q from x, k from z).
MultiHeadAttention computes the projections (``self_projections`` and its Eq. (5) pair in
nn/multihead.py); this file holds the setting, the rows of ``in_proj`` it needs, and the
weights as matrices (``projection_weights``) for the circuits and torch.nn's layout.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .lora import effective_weight

__all__ = ["ATTENTION_SCORES", "check_scores", "in_proj_rows", "projection_weights"]

ATTENTION_SCORES = ("separate", "shared", "dot")


def check_scores(who: str, scores: object, n_head: int, n_kv_head: int) -> str:
    """``scores`` checked against ATTENTION_SCORES, and against grouped-query attention."""
    if scores not in ATTENTION_SCORES:
        raise ValueError(
            f"{who}: attention_scores={scores!r} is not allowed; allowed: "
            f"{', '.join(map(repr, ATTENTION_SCORES))}"
        )
    if scores != "separate" and n_kv_head != n_head:
        raise ValueError(
            f"{who}: attention_scores={scores!r} computes queries and keys alike (q = k), so "
            f"keys need as many heads as queries: n_kv_head={n_kv_head} must equal "
            f"n_head={n_head} (grouped-query attention needs attention_scores='separate')"
        )
    return str(scores)


def in_proj_rows(scores: str, d_q: int, d_kv: int) -> list[int]:
    """The rows of ``in_proj``, block by block: [W^Q, W^K, W^V], [W^{QK}, W^V] or [W^V]."""
    return {"separate": [d_q, d_kv, d_kv], "shared": [d_q, d_kv], "dot": [d_kv]}[scores]


def projection_weights(attn: nn.Module) -> tuple[tuple[Tensor, Tensor | None], ...]:
    """((W^Q, b^Q), (W^K, b^K), (W^V, b^V)), each W (rows, C) in torch's layout: views of
    ``in_proj``; "shared" gives W^{QK} twice, "dot" the identity (no bias) twice."""
    d_q, d_kv = attn.n_head * attn.head_dim, attn.n_kv_head * attn.head_dim
    rows = in_proj_rows(attn.scores, d_q, d_kv)
    ws = effective_weight(attn.in_proj).split(rows)  # W (+ LoRA's update, nn/lora.py)
    bias = attn.in_proj.bias
    bs = (None,) * len(rows) if bias is None else bias.split(rows)
    parts = list(zip(ws, bs, strict=True))
    if attn.scores == "shared":
        parts.insert(1, parts[0])
    elif attn.scores == "dot":
        w = attn.in_proj.weight
        eye = torch.eye(attn.d_model, dtype=w.dtype, device=w.device)
        parts = [(eye, None), (eye, None), *parts]
    return tuple(parts)
