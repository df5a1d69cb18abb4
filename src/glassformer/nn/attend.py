"""``attend``: Eq. (1) on the heads' queries, keys and values, by the kernel that fits.

    written out   ``scores``, ``pattern``, ``weighted_sum`` (Eqs. 2, 3, 1), with a hook point
                  on the mask, the scores â and the weights A: when a hook reads one of them
                  or the caller asks for A (``need_weights``);
    graph         ``graph_attention`` (nn/graph_attention.py; glassformer.graphs.kernel_for
                  picks its kernel): when a graph is given;
    fused         ``torch.nn.functional.scaled_dot_product_attention``, which never forms A:
                  otherwise.

All three compute the same z (B, H, T, D_v), zeros for a query row with nothing to attend to.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from ..graphs import AttentionGraph
from .graph_attention import graph_attention, graph_mask, with_edges
from .hooks import HookPoint
from .scaled_dot_product import (
    check_mask,
    fused_attention,
    pattern,
    scores,
    weighted_sum,
    with_causal,
)

__all__ = ["AttentionHooks", "attend"]


class AttentionHooks(Protocol):
    """The hook points of the written-out path (MultiHeadAttention has them)."""

    hook_mask: HookPoint
    hook_attn_scores: HookPoint
    hook_pattern: HookPoint


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    causal: bool = False,
    graph: AttentionGraph | None = None,
    key_start: int = 0,
    query_start: int | None = None,
    hooks: AttentionHooks | None = None,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """(z (B, H, T, D_v), A (B, H, T, S) if need_weights else None): Eq. (1).

    q (B, H, T, D), k and v (B, H_kv, S, ·). mask: bool (True = may attend) or additive
    float, broadcastable to (B, H, T, S). causal: the causal mask too (bottom-right aligned for
    T < S). graph: attend only along its edges; the keys are at positions ``key_start``.. (a
    rolling KV cache keeps the latest), the queries at ``query_start``.. (default: the last T
    of the keys). hooks: the hook points of the written-out path, which runs when one of them
    is read or when need_weights is True.
    """
    t, s = q.shape[2], k.shape[2]
    if mask is not None:
        check_mask(mask, (q.shape[0], q.shape[1], t, s), "MultiHeadAttention")
    if need_weights or (
        hooks is not None
        and (hooks.hook_mask.active or hooks.hook_attn_scores.active or hooks.hook_pattern.active)
    ):  # Eq. (1) written out, every step hooked
        mask = with_causal(mask, causal, t, s, q.device)
        if graph is not None:  # the graph's edges as a (T, S) mask
            edges = graph_mask(
                graph, t, s, key_start=key_start, query_start=query_start, causal=causal
            )
            mask = with_edges(mask, edges.to(q.device))
        if hooks is not None and hooks.hook_mask.active:
            mask = hooks.hook_mask(_expanded(mask, q, k))
        a = scores(q, k, mask)  # â = QKᵀ/√d_k + b (Eq. 2)
        weights = pattern(a if hooks is None else hooks.hook_attn_scores(a))  # A (Eq. 3)
        if hooks is not None:
            weights = hooks.hook_pattern(weights)
        return weighted_sum(weights, v, dropout_p), (weights if need_weights else None)
    if graph is not None:  # Eq. (1) over the graph's edges only
        z = graph_attention(
            q,
            k,
            v,
            graph,
            mask,
            dropout_p,
            causal=causal,
            key_start=key_start,
            query_start=query_start,
        )
        return z, None
    if mask is None and (not causal or t == s):  # nothing to mask but the causal triangle
        z = F.scaled_dot_product_attention(
            q, k, v, dropout_p=dropout_p, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1]
        )
        return z, None
    return fused_attention(q, k, v, mask, dropout_p, causal=causal), None


def _expanded(mask: Tensor | None, q: Tensor, k: Tensor) -> Tensor:
    """The mask as (B, H, T, S) (a broadcast view); all True when there is none."""
    shape = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    full = torch.ones((), dtype=torch.bool, device=q.device) if mask is None else mask
    return full.expand(shape)
