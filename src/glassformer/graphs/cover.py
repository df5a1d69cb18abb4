"""Where a graph's edges can be (its Cover), and listing them by visiting only those places.

A graph's edges into T queries from S keys could be found by testing all T·S pairs; a
sliding window of w has only about T·2w of them. ``enumerate_edges`` tests, for each query,
the keys of its cover (the band's offsets, the extra keys, every key for a dense row), in
chunks of queries so that memory stays bounded, and returns PyTorch Geometric's (2, E)
edge_index sorted by (query, key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce
from typing import Protocol

import torch
from torch import Tensor

__all__ = ["Cover", "candidate_width", "enumerate_edges", "unique_edges"]

CHUNK = 1 << 22  # candidate pairs looked at in one go


class Covered(Protocol):
    """What ``enumerate_edges`` reads of a graph (an ``AttentionGraph`` of graph.py, which
    imports this module): its cover and its edge test."""

    def cover(self, q_pos: Tensor, k_pos: Tensor) -> Cover: ...

    def allows(self, i: Tensor, j: Tensor, n: int) -> Tensor: ...


@dataclass(frozen=True)
class Cover:
    """Where the edges into each query can be, for attention that visits only those keys.

    For the query at position i: the keys at positions j with ``before`` >= i - j >= -``after``
    and (i - j) a multiple of ``dilation`` (the band; empty when before + after < 0; math.inf
    when unbounded), the key positions ``extras[n]`` (-1 = none), and every key when ``rows[n]``.
    Every edge is in the cover; not every candidate is an edge (``allows`` decides)."""

    before: float
    after: float
    dilation: int
    extras: Tensor  # (T, e) key positions, -1 = none
    rows: Tensor  # (T,) bool: queries whose row is dense

    @classmethod
    def band(cls, q_pos: Tensor, before: float, after: float, dilation: int = 1) -> Cover:
        """A band alone: no extra key, no dense row."""
        no_rows = torch.zeros(q_pos.numel(), dtype=torch.bool, device=q_pos.device)
        return cls(before, after, dilation, q_pos.new_empty(q_pos.numel(), 0), no_rows)

    @classmethod
    def union(cls, covers: list[Cover]) -> Cover:
        """The cover of a union of graphs: the widest of the bands that are not empty (their
        dilations' gcd), every part's extra keys, a row dense where any part's is."""
        bands = [c for c in covers if not c.band_empty]
        if bands:
            before, after = max(c.before for c in bands), max(c.after for c in bands)
            dilation = reduce(math.gcd, (c.dilation for c in bands))
        else:
            before, after, dilation = -1.0, -1.0, 1
        return cls(before, after, dilation, *cls._pooled(covers))

    @classmethod
    def intersection(cls, covers: list[Cover]) -> Cover:
        """The cover of an intersection of graphs. An edge of every part lies in every part's
        cover: in the common band (the narrowest, the dilations' lcm), or among some part's
        extras, or in a row that some part leaves dense."""
        before, after = min(c.before for c in covers), min(c.after for c in covers)
        dilation = reduce(math.lcm, (c.dilation for c in covers))
        return cls(before, after, dilation, *cls._pooled(covers))

    @staticmethod
    def _pooled(covers: list[Cover]) -> tuple[Tensor, Tensor]:
        """Every cover's extra keys side by side, and the rows dense in any of them."""
        extras = torch.cat([c.extras for c in covers], dim=1)
        return extras, reduce(torch.logical_or, (c.rows for c in covers))

    @property
    def band_empty(self) -> bool:
        return self.before + self.after < 0

    @property
    def bounded(self) -> bool:
        return self.band_empty or (math.isfinite(self.before) and math.isfinite(self.after))


def enumerate_edges(graph: Covered, q_pos: Tensor, k_pos: Tensor, offset: int) -> Tensor:
    """The edges of ``graph`` among the candidates of its cover, as (2, E) (key, query)
    indices sorted by query then key. Keys are contiguous: key position p has index p - k0."""
    t, s = q_pos.numel(), k_pos.numel()
    if t == 0 or s == 0:
        return torch.empty(2, 0, dtype=torch.long, device=k_pos.device)
    c = graph.cover(q_pos, k_pos)
    k0 = int(k_pos[0])
    found = []
    rows = max(1, CHUNK // candidate_width(c, q_pos, s))
    for a in range(0, t, rows):
        q = q_pos[a : a + rows]
        cand = _candidates(c, q, k0, s, a)  # (t', m) key indices, -1 = none
        ok = (cand >= 0) & graph.allows(q[:, None], cand + k0, s)
        query, slot = ok.nonzero(as_tuple=True)
        found.append(torch.stack([cand[query, slot], query + a + offset]))
    return unique_edges(torch.cat(found, dim=1), s)


def _band(c: Cover, q_pos: Tensor, k0: int, s: int) -> tuple[int, int]:
    """The cover's band clipped to the keys there are: offsets i - j in [-after, before]."""
    if c.band_empty or q_pos.numel() == 0:
        return 0, -1
    before = min(c.before, int(q_pos.max()) - k0)
    after = min(c.after, k0 + s - 1 - int(q_pos.min()))
    return int(before), int(after)


def candidate_width(c: Cover, q_pos: Tensor, s: int) -> int:
    """Candidates per query: the band's offsets, the extras, every key for a dense row."""
    if bool(c.rows.any()):
        return s + c.extras.shape[1]
    before, after = _band(c, q_pos, 0 if q_pos.numel() == 0 else int(q_pos.min()), s)
    band = max(0, (before + after) // c.dilation + 1)
    return max(1, min(s, band) + c.extras.shape[1])


def _candidates(c: Cover, q: Tensor, k0: int, s: int, a: int) -> Tensor:
    """(t', m) key indices that may be edges into queries at positions q (-1 = none)."""
    before, after = _band(c, q, k0, s)
    offsets = torch.arange(-after, before + 1, device=q.device)  # i - j
    offsets = offsets[offsets % c.dilation == 0]
    band = q[:, None] - offsets.flip(0)[None, :] - k0  # (t', w) ascending key indices
    band = band.masked_fill((band < 0) | (band >= s), -1)
    extras = c.extras[a : a + q.numel()]
    extras = torch.where((extras >= k0) & (extras < k0 + s), extras - k0, -1)
    dense = c.rows[a : a + q.numel()]
    if bool(dense.any()):
        every = torch.arange(s, device=q.device)
        band = torch.cat([band, torch.where(dense[:, None], every, -1)], dim=1)
    return torch.cat([band, extras], dim=1)


def unique_edges(edges: Tensor, s: int) -> Tensor:
    """Drop repeated edges, sort by (query, key)."""
    code = torch.unique(edges[1] * s + edges[0])  # sorted
    return torch.stack([code % s, code // s])
