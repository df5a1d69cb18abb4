"""Eq. (1) on an attention graph: each query attends only the keys joined to it.

Formal Algorithms for Transformers, "Transformers as GNNs": sparse attention is a GNN on a
sparse graph. With a graph G (glassformer.graphs) the softmax of Eq. (3) runs over the edges
into each query, z_n = Σ_{m: m→n ∈ G} A_nm v_m, and a padding mask removes the padded keys as
usual. Three paths compute it and agree (values and gradients):

  * ``dense``: G as a (T, S) boolean mask and torch's fused kernel, O(T·S);
  * ``local``: a band of keys around each block of queries, plus a few extra keys and dense
    rows (sliding window, dilated, global + local, BigBird), O(T·w) in time and memory;
  * ``edges``: message passing over G's edge list (any graph), O(E·D).

``auto`` takes the cheapest, as glassformer.graphs.kernel_for judges from the graph: ``dense``
for short sequences, where it is fastest.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..graphs import KERNELS, AttentionGraph, Cover, band_is_edges, kernel_for
from ..graphs.kernels.sparse import edge_attention, local_attention
from .scaled_dot_product import fused_attention

__all__ = ["PATHS", "graph_attention", "graph_mask", "with_edges"]

PATHS = ("auto", *KERNELS)


def graph_mask(
    graph: AttentionGraph,
    t: int,
    s: int,
    *,
    key_start: int = 0,
    query_start: int | None = None,
    causal: bool = False,
    device=None,
) -> Tensor:
    """(T, S) bool: the graph's edges from S keys at positions key_start.. (a rolling KV cache
    keeps only the latest keys) into T queries at positions query_start.. (default: the last
    T of the keys, as in self-attention)."""
    g = graph.causal() if causal else graph
    q_pos, k_pos = _positions(t, s, key_start, query_start, device)
    graph.check_positions(_length(t, s, key_start, query_start))
    return g.allows(q_pos[:, None], k_pos[None, :], key_start + s)  # (T, S)


def graph_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    graph: AttentionGraph,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    causal: bool = False,
    key_start: int = 0,
    query_start: int | None = None,
    scale: float | None = None,
    path: str = "auto",
) -> Tensor:
    """z (B, H, T, D_v): Eq. (1) with the softmax over the edges of ``graph`` into each query.

    q (B, H, T, D), k and v (B, H_kv, S, ·): the keys are at positions ``key_start``.., the
    queries at ``query_start``.. (default: the last T of the keys; cross-attention gives the
    target positions). mask: bool (True = may attend) or additive float,
    broadcastable to (B, H, T, S), e.g. the (B, 1, 1, S) padding mask. causal: intersect the
    graph with the causal one. path: one of PATHS."""
    if path not in PATHS:
        raise ValueError(f"graph_attention: path must be one of {PATHS}, got {path!r}")
    b, _, t, _ = q.shape
    s = k.shape[2]
    g = graph.causal() if causal else graph
    q_pos, k_pos = _positions(t, s, key_start, query_start, q.device)
    graph.check_positions(_length(t, s, key_start, query_start))
    key_mask = _key_mask(mask, b, t, s)
    n = key_start + s  # key positions there are
    if path == "auto":
        path = kernel_for(g, q_pos, k_pos, sparse_ok=key_mask is not None or mask is None)
    elif path != "dense" and key_mask is None and mask is not None:
        raise ValueError(
            f"graph_attention: the {path!r} path takes a key padding mask (B, 1, 1, S) only; "
            f"got a mask of shape {tuple(mask.shape)}"
        )
    if path == "dense":
        edges = g.allows(q_pos[:, None], k_pos[None, :], n)  # (T, S)
        full = with_edges(mask, edges)
        return fused_attention(q, k, v, full, dropout_p, scale=scale)
    if path == "local":
        c = g.cover(q_pos, k_pos)
        if not c.bounded:
            raise ValueError(f"graph_attention: {g.spec!r} has no band to run on the local path")
        return local_attention(
            q,
            k,
            v,
            before=0 if c.band_empty else int(c.before),  # an empty band: allows refuses
            after=0 if c.band_empty else int(c.after),
            dilation=c.dilation,
            allows=lambda i, j: g.allows(i, j, n),
            band_full=band_is_edges(g, c),
            q_pos=q_pos,
            k_pos=k_pos,
            key_mask=key_mask,
            extras=_extra_indices(c, key_start, s),
            rows=c.rows.nonzero().squeeze(1) if bool(c.rows.any()) else None,
            dropout_p=dropout_p,
            scale=scale,
        )
    edges = g.edges_at(q_pos, k_pos)  # (2, E): key j, query i
    return edge_attention(q, k, v, edges, key_mask=key_mask, dropout_p=dropout_p, scale=scale)


def _positions(t: int, s: int, key_start: int, query_start, device) -> tuple[Tensor, Tensor]:
    """(T,) query and (S,) key positions."""
    k_pos = torch.arange(key_start, key_start + s, device=device)  # (S,)
    if query_start is not None:
        return torch.arange(query_start, query_start + t, device=device), k_pos
    if t > s:
        raise ValueError(f"self-attention on a graph needs T <= S queries, got T={t}, S={s}")
    return k_pos[s - t :], k_pos  # (T,), (S,)


def _length(t: int, s: int, key_start: int, query_start: int | None) -> int:
    """The number of positions the call reaches: past its last key or its last query."""
    return max(key_start + s, t if query_start is None else query_start + t)


def _key_mask(mask: Tensor | None, b: int, t: int, s: int) -> Tensor | None:
    """The (B, S) key padding mask, if ``mask`` is one: bool, shaped (B or 1, 1, 1, S)."""
    if mask is None or mask.dtype != torch.bool or mask.dim() != 4:
        return None
    if mask.shape[1] != 1 or mask.shape[2] != 1 or mask.shape[3] != s:
        return None
    return mask[:, 0, 0, :].expand(b, s)  # (B, S)


def with_edges(mask: Tensor | None, edges: Tensor) -> Tensor:
    """``mask`` (bool or additive float) with the keys off the graph's edges masked too."""
    if mask is None:
        return edges
    if mask.dtype == torch.bool:
        return mask & edges
    return mask.masked_fill(~edges, float("-inf"))


def _extra_indices(c: Cover, key_start: int, s: int) -> Tensor | None:
    """The cover's extra key positions as key indices, each at most once per row (-1 none)."""
    if c.extras.shape[1] == 0:
        return None
    idx = c.extras - key_start
    idx = torch.where((c.extras >= 0) & (idx >= 0) & (idx < s), idx, -1)
    idx, _ = idx.sort(dim=1)
    repeat = torch.zeros_like(idx, dtype=torch.bool)
    repeat[:, 1:] = idx[:, 1:] == idx[:, :-1]
    return idx.masked_fill(repeat, -1)
