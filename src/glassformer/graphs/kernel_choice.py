"""Which kernel computes attention on a graph fastest: ``kernel_for``.

Three kernels compute Eq. (1) on an attention graph and agree (values and gradients):
``dense`` (the graph as a (T, S) mask for torch's fused kernel, O(T·S)), ``local`` (a band of
keys per block of queries, plus extra keys and dense rows, O(T·w); sparse.py) and ``edges``
(message passing over the edge list, O(E·D); messages.py). The choice reads the graph's
cover (cover.py), so it lives beside the graph classes.
"""

from __future__ import annotations

from torch import Tensor

from .cover import Cover
from .graph import AttentionGraph, Band, Intersection, Union

__all__ = ["DENSE_BELOW", "KERNELS", "band_is_edges", "kernel_for"]

KERNELS = ("dense", "local", "edges")
DENSE_BELOW = 1 << 16  # T·S at or below which the dense kernel is the fastest on a CPU


def kernel_for(graph: AttentionGraph, q_pos: Tensor, k_pos: Tensor, *, sparse_ok: bool) -> str:
    """The cheapest of KERNELS for the queries at q_pos (T,) and keys at k_pos (S,): dense on
    short sequences or when the sparse kernels cannot take the mask (``sparse_ok`` False: a
    mask other than a key padding mask), local when the graph has a narrow band, edges when it
    has few edges."""
    t, s = q_pos.numel(), k_pos.numel()
    if not sparse_ok or t * s <= DENSE_BELOW:
        return "dense"
    c = graph.cover(q_pos, k_pos)
    if c.bounded:
        width = (0 if c.band_empty else int(c.before + c.after) + 1) + c.extras.shape[1]
        dense_rows = int(c.rows.sum())
        if 4 * (width * t + dense_rows * s) <= t * s:
            return "local"
    if 16 * graph.num_edges(t, s) <= t * s:  # an edge costs about 12 dense entries (T 1k-4k)
        return "edges"
    return "dense"


def band_is_edges(graph: AttentionGraph, c: Cover) -> bool:
    """Is every candidate of the cover's band an edge of the graph? Then the local kernel
    needs no test on the band (a window, a window & causal, BigBird's window | globals |
    random keys)."""
    if c.band_empty:
        return False
    if isinstance(graph, Band):
        return (
            graph.before >= c.before and graph.after >= c.after and c.dilation % graph.dilation == 0
        )
    if isinstance(graph, Union):
        return any(band_is_edges(p, c) for p in graph.parts)
    if isinstance(graph, Intersection):
        return all(band_is_edges(p, c) for p in graph.parts)
    return False
