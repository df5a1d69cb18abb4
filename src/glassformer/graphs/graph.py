"""An attention graph: which query position may receive a message from which key position.

Formal Algorithms for Transformers, "Transformers as GNNs": attention is message passing on a
graph. Query n aggregates the values v_m of its neighbours m, weighted by the softmax of
q_nᵀ k_m / √d_k over those neighbours (Eq. 1-3 with the sum running over the edges into n).
A transformer is a GNN on the fully connected graph. Sparse attention is a GNN on a sparse
graph, and each layer may use a different graph.

A graph here is a rule on positions: ``allows(i, j)`` says whether the query at position i
receives the key at position j (the edge j -> i). It is the boolean mask of glassformer.nn
(True = may attend) written as a function, so that it exists at every length and costs
nothing until asked. The same graph gives

  * ``mask(T, S)``: the dense (T, S) mask, for the written-out attention and for pictures;
  * ``edge_index(T, S)``: its edges as PyTorch Geometric's (2, E) tensor (row 0 the source
    key j, row 1 the target query i), for message passing over the edges;
  * ``cover(q_pos, k_pos)``: where its edges can be (a band of offsets around the diagonal,
    a few extra keys per query, a few dense rows), for attention that costs O(T·w).

Graphs combine with ``|`` (union: an edge of either) and ``&`` (intersection: an edge of
both). A causal model uses ``graph.causal()``, the graph with the edges to later keys removed.
"""

from __future__ import annotations

import math
from functools import reduce

import torch
from torch import Tensor

from .cover import CHUNK, Cover, candidate_width, enumerate_edges, unique_edges
from .spec_text import band_spec, joined_spec, spec_key

__all__ = ["INF", "AttentionGraph", "Band", "Intersection", "Union"]

INF = math.inf

EDGE_COUNTS_KEPT = 64  # (T, S) sizes whose edge count a graph remembers


class AttentionGraph:
    """Base class: subclasses define ``allows`` and ``cover``; the rest follows from them."""

    spec: str | dict = "?"  # the text (or object) that ``glassformer.graphs.parse`` reads back

    # What a graph is ---------------------------------------------------------------------------
    def allows(self, i: Tensor, j: Tensor, n: int) -> Tensor:
        """Bool, broadcast of i and j: does query position i receive key position j? ``n`` is
        the number of key positions of the call (a random graph draws its keys among them)."""
        raise NotImplementedError

    def cover(self, q_pos: Tensor, k_pos: Tensor) -> Cover:
        """A Cover of the edges from keys ``k_pos`` (S,) into queries ``q_pos`` (T,)."""
        raise NotImplementedError

    def causal(self) -> AttentionGraph:
        """The graph a causal model uses: no edge from a later key (j > i)."""
        return self & Band(INF, 0)

    def lookback(self) -> int | None:
        """The largest i - j of an edge, when a rule bounds it at every position (a sliding
        window of w: w - 1); None when unbounded (full, global tokens, edges given by hand).
        A causal model with a bounded lookback b needs only the latest b + 1 keys."""
        return None

    def node_count(self) -> int | None:
        """How many positions the graph is defined on: N for a graph given by its edges
        among N nodes (an intersection: its smallest part's; a union: its largest part's),
        None for a rule that holds at every length (and a union with one)."""
        return None

    def check_positions(self, n: int) -> None:
        """Refuse to run attention on ``n`` positions when the graph has fewer nodes (a
        sequence of at most N positions runs on the first ones, as decoding with a KV cache
        does). ``mask`` and ``edge_index`` answer at any size: no edge beyond the nodes."""
        nodes = self.node_count()
        if nodes is not None and n > nodes:
            raise ValueError(
                f"the attention graph has {nodes} nodes but the sequence has {n} positions: "
                f"allowed at most {nodes} (build the graph for {n} nodes, or shorten the input)"
            )

    # What follows from it ----------------------------------------------------------------------
    def mask(
        self, t: int, s: int | None = None, *, query_start: int | None = None, device=None
    ) -> Tensor:
        """(T, S) bool, True where query n may attend key m. The queries are the last T of the
        S positions (decoding with a KV cache, as glassformer.nn's masks), or at positions
        ``query_start``.. (cross-attention: target positions, the keys are source positions)."""
        s = t if s is None else s
        q_pos, k_pos = _positions(t, s, device, query_start)
        return self.allows(q_pos[:, None], k_pos[None, :], s)

    def edge_index(self, t: int, s: int | None = None, *, device=None) -> Tensor:
        """(2, E) long, PyTorch Geometric's convention: row 0 the key (source) index j, row 1
        the query (target) index i, one column per edge j -> i, sorted by (i, j)."""
        s = t if s is None else s
        q_pos, k_pos = _positions(t, s, device)
        return self.edges_at(q_pos, k_pos)

    def num_edges(self, t: int, s: int | None = None) -> int:
        """How many (query, key) pairs attend: the messages one layer passes on T positions.
        Counted once per (T, S) and remembered (the last few sizes): a training loop asks at
        every step which path is cheapest."""
        s = t if s is None else s
        memo = self.__dict__.setdefault("_edge_counts", {})
        if (t, s) not in memo:
            if len(memo) >= EDGE_COUNTS_KEPT:
                memo.clear()
            memo[t, s] = self._count_edges(t, s)
        return memo[t, s]

    def _count_edges(self, t: int, s: int) -> int:
        q_pos, k_pos = _positions(t, s, None)
        rows = max(1, CHUNK // max(1, s))
        return sum(
            self.edges_at(q_pos[a : a + rows], k_pos, offset=a).shape[1] for a in range(0, t, rows)
        )

    def edges_at(self, q_pos: Tensor, k_pos: Tensor, offset: int = 0) -> Tensor:
        """The edges into queries ``q_pos`` (T,) from keys ``k_pos`` (S,) as (2, E) indices
        (query indices shifted by ``offset``), found by visiting the cover's candidates."""
        return enumerate_edges(self, q_pos, k_pos, offset)

    # Algebra -------------------------------------------------------------------------------------
    def __or__(self, other: AttentionGraph) -> AttentionGraph:
        return Union(self, _graph(other, "|"))

    def __and__(self, other: AttentionGraph) -> AttentionGraph:
        return Intersection(self, _graph(other, "&"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AttentionGraph) and spec_key(self.spec) == spec_key(other.spec)

    def __hash__(self) -> int:
        return hash(spec_key(self.spec))

    def __repr__(self) -> str:
        return f"AttentionGraph({self.spec!r})"


class Band(AttentionGraph):
    """Edges j -> i with -after <= i - j <= before and (i - j) a multiple of ``dilation``:
    full (inf, inf), causal (inf, 0), a window (w - 1, w - 1), a causal window (w - 1, 0)."""

    def __init__(self, before: float, after: float, dilation: int = 1) -> None:
        for name, v in (("before", before), ("after", after)):
            if not (v == INF or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)):
                raise ValueError(f"Band: {name} must be an int >= 0 or math.inf, got {v!r}")
        if not isinstance(dilation, int) or isinstance(dilation, bool) or dilation < 1:
            raise ValueError(f"Band: dilation must be an int >= 1, got {dilation!r}")
        self.before, self.after, self.dilation = before, after, dilation
        self.spec = band_spec(before, after, dilation)

    def allows(self, i, j, n):
        # -after <= i - j <= before, compared as bools on the broadcast shape (no (T, S) ints)
        tests = []
        if self.before != INF:
            tests.append(lambda: j >= i - int(self.before))
        if self.after != INF:
            tests.append(lambda: j <= i + int(self.after))
        if self.dilation > 1:  # i - j a multiple of d: the same residue
            tests.append(lambda: (i % self.dilation) == (j % self.dilation))
        ok = torch.ones((), dtype=torch.bool, device=i.device)
        for test in tests:  # one (T, S) bool at a time, combined in place
            ok = test() if ok.dim() == 0 else ok.logical_and_(test())
        return ok.expand(torch.broadcast_shapes(i.shape, j.shape))

    def cover(self, q_pos, k_pos):
        return Cover.band(q_pos, self.before, self.after, self.dilation)

    def causal(self):
        return Band(self.before, 0, self.dilation)

    def lookback(self):
        return None if self.before == INF else int(self.before)


class Union(AttentionGraph):
    """An edge of any of the graphs (e.g. Longformer's sliding window | global tokens)."""

    def __init__(self, *parts: AttentionGraph, spec: str | None = None) -> None:
        self.parts = _flatten(parts, Union)
        self.spec = spec or joined_spec(self.parts, "|")

    def allows(self, i, j, n):
        return reduce(torch.logical_or, (p.allows(i, j, n) for p in self.parts))

    def cover(self, q_pos, k_pos):
        return Cover.union([p.cover(q_pos, k_pos) for p in self.parts])

    def causal(self):
        return Union(*(p.causal() for p in self.parts))

    def lookback(self):
        reach = [p.lookback() for p in self.parts]
        return None if None in reach else max(reach)

    def node_count(self):
        counts = [p.node_count() for p in self.parts]  # a part that holds everywhere: None
        return None if None in counts else max(counts)

    def edges_at(self, q_pos, k_pos, offset=0):
        edges = torch.cat([p.edges_at(q_pos, k_pos, offset) for p in self.parts], dim=1)
        return unique_edges(edges, k_pos.numel())


class Intersection(AttentionGraph):
    """An edge of every one of the graphs (e.g. a window & causal)."""

    def __init__(self, *parts: AttentionGraph, spec: str | None = None) -> None:
        self.parts = _flatten(parts, Intersection)
        self.spec = spec or joined_spec(self.parts, "&")

    def allows(self, i, j, n):
        return reduce(torch.logical_and, (p.allows(i, j, n) for p in self.parts))

    def cover(self, q_pos, k_pos):
        return Cover.intersection([p.cover(q_pos, k_pos) for p in self.parts])

    def causal(self):
        return Intersection(*(p.causal() for p in self.parts))

    def lookback(self):
        reach = [r for r in (p.lookback() for p in self.parts) if r is not None]
        return min(reach) if reach else None

    def node_count(self):
        counts = [n for n in (p.node_count() for p in self.parts) if n is not None]
        return min(counts) if counts else None

    def edges_at(self, q_pos, k_pos, offset=0):
        # the edges of the sparsest part, kept where every other part allows them
        s = k_pos.numel()
        first, *rest = sorted(
            self.parts, key=lambda p: candidate_width(p.cover(q_pos, k_pos), q_pos, s)
        )
        edges = first.edges_at(q_pos, k_pos, offset)
        i, j = q_pos[edges[1] - offset], k_pos[edges[0]]
        keep = reduce(torch.logical_and, (p.allows(i, j, s) for p in rest))
        return edges[:, keep]


# Helpers -----------------------------------------------------------------------------------------
def _positions(t: int, s: int, device, query_start: int | None = None) -> tuple[Tensor, Tensor]:
    """Query positions s-t..s-1 (the last T) or query_start.., and key positions 0..s-1."""
    if query_start is not None:
        if t < 0 or s < 0 or query_start < 0:
            raise ValueError(
                f"an attention graph needs T, S, query_start >= 0, got {t}, {s}, {query_start}"
            )
        return torch.arange(query_start, query_start + t, device=device), torch.arange(
            s, device=device
        )
    if t < 0 or s < t:
        raise ValueError(f"an attention graph needs 0 <= T <= S, got T={t}, S={s}")
    k_pos = torch.arange(s, device=device)
    return k_pos[s - t :], k_pos


def _flatten(parts, kind) -> tuple[AttentionGraph, ...]:
    """The parts, with those made by the same operator spliced in: (a | b) | c = a | b | c."""
    flat = []
    for p in parts:
        p = _graph(p, "|" if kind is Union else "&")
        plain = type(p) is kind and p.spec == joined_spec(p.parts, "|" if kind is Union else "&")
        flat.extend(p.parts if plain else [p])
    return tuple(flat)


def _graph(value, op: str) -> AttentionGraph:
    if not isinstance(value, AttentionGraph):
        raise TypeError(f"cannot combine an AttentionGraph with {type(value).__name__} by {op}")
    return value
