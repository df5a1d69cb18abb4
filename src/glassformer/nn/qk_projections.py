"""The road to queries and keys ("Formal Algorithms for Transformers", "Self-Attention across
the sequence"): the three ways MultiHeadAttention scores a query token x against a key token x′, its
``attention_scores`` setting.

    "dot"       xᵀ x′               parameter-free: q = k = x, split into heads
    "shared"    xᵀ Uᵀ U x′          one projection U = W^{QK} for queries and keys: q = k = U x
    "separate"  xᵀ U_qᵀ U_k x′      separate projections W^Q, W^K (Eq. 4; the default): q · k′

Every setting scales the scores by 1/√d_k (Eq. 2) and keeps the values W^V and the output W^O.
The projections the setting has, each an nn.Linear of MultiHeadAttention: ``q_proj``,
``k_proj``, ``v_proj`` ("separate"), ``qk_proj``, ``v_proj`` ("shared"), ``v_proj`` ("dot").
With "dot", head i compares the i-th D = C / H
coordinates of the two tokens.

The notes' reason for the third step: with q = k the score matrix is symmetric (a token
cannot attend to another more than that one attends to it), and a token scores itself at least
as high as any key no longer than it (Cauchy–Schwarz: xᵀx′ <= |x| |x′| <= xᵀx when |x′| <= |x|):
with equal lengths its own position is every row's largest score; after a norm layer the
lengths are only about equal, so in most rows, not all. "shared" and "dot"
need as many key heads as query heads (no grouped-query attention: n_kv_head = n_head).
Cross-attention (Eq. 5) applies the same setting to x and the source z (q from x, k from z).
MultiHeadAttention computes the projections (``projections`` in nn/multihead.py, Eqs. (4) and
(5)); this file holds the setting, the projections it needs with their rows
(``projection_rows``), and the weights as matrices (``projection_weights``) for the circuits
and torch.nn's layout.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .lora import effective_weight

__all__ = ["ATTENTION_SCORES", "check_scores", "projection_rows", "projection_weights"]

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


def projection_rows(scores: str, d_q: int, d_kv: int) -> dict[str, int]:
    """The projections of ``scores`` -> their rows (output features), in the order the
    checkpoints of the fused layout stacked them ([W^Q; W^K; W^V], [W^{QK}; W^V], [W^V])."""
    if scores == "separate":
        return {"q_proj": d_q, "k_proj": d_kv, "v_proj": d_kv}
    return {"qk_proj": d_q, "v_proj": d_kv} if scores == "shared" else {"v_proj": d_kv}


def projection_weights(attn: nn.Module) -> tuple[tuple[Tensor, Tensor | None], ...]:
    """((W^Q, b^Q), (W^K, b^K), (W^V, b^V)), each W (rows, C) in torch's layout: each
    projection's matrix and ``bias`` (``effective_weight``: a LoRA layer's merged_weight,
    nn/lora.py); "shared" gives W^{QK} twice, "dot" the identity (no bias) twice."""
    v = (effective_weight(attn.v_proj), attn.v_proj.bias)
    if attn.scores == "separate":
        q, k = attn.q_proj, attn.k_proj
        return (effective_weight(q), q.bias), (effective_weight(k), k.bias), v
    if attn.scores == "shared":
        qk = (effective_weight(attn.qk_proj), attn.qk_proj.bias)
        return qk, qk, v
    eye = torch.eye(attn.d_model, dtype=v[0].dtype, device=v[0].device)
    return (eye, None), (eye, None), v
