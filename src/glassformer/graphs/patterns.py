"""The graphs sparse-attention models use, as constructors.

    full()                     every query attends every key (the notes' fully connected GNN)
    causal()                   key j <= query i (Phuong & Hutter's Algorithm 10)
    sliding_window(w)          |i - j| < w; causal: 0 <= i - j < w, the w latest positions
                               (Mistral's window; Longformer's window of 2w - 1)
    dilated(w, d)              i - j a multiple of d, |i - j| < w·d: w keys each side, d apart
    strided(l)                 Sparse Transformer's strided pattern: |i - j| < l, or i - j a
                               multiple of l
    global_tokens(idx)         the positions idx attend to every key and every query attends
                               them (Longformer's global attention; union it with a window)
    random_keys(r, seed)       r keys per query drawn by a hash of (seed, i)
    bigbird(w, g, r, seed)     sliding_window(w) | global_tokens(range(g)) | random_keys(r)
    self_loops()               each position attends itself only
    from_edge_index(ei, n)     PyTorch Geometric's (2, E): row 0 source j, row 1 target i
    from_adjacency(m)          m[i, j] True: query i attends key j
    from_networkx(G)           the edges of a networkx graph (both ways if undirected)

All graphs are rules on positions, so they exist at any length; an edge-given graph has edges
among its ``num_nodes`` positions only.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from .cover import Cover
from .graph import INF, AttentionGraph, Band, Union

__all__ = [
    "CAUSAL",
    "FULL",
    "Band",
    "EdgeGraph",
    "GlobalTokens",
    "RandomKeys",
    "bigbird",
    "causal",
    "dilated",
    "from_adjacency",
    "from_edge_index",
    "from_networkx",
    "full",
    "global_tokens",
    "random_keys",
    "self_loops",
    "sliding_window",
    "strided",
]


class GlobalTokens(AttentionGraph):
    """The positions ``idx`` attend to every key, and every query attends to them."""

    def __init__(self, idx: Iterable[int]) -> None:
        idx = sorted({int(i) for i in idx})
        if not idx or idx[0] < 0:
            raise ValueError(f"global_tokens: need at least one position >= 0, got {idx}")
        self.idx = idx
        self.spec = "global:" + ":".join(map(str, idx))

    def allows(self, i, j, n):
        g = torch.tensor(self.idx, device=i.device)
        return torch.isin(i, g) | torch.isin(j, g)

    def cover(self, q_pos, k_pos):
        g = torch.tensor(self.idx, device=q_pos.device)
        extras = g.expand(q_pos.numel(), -1)  # (T, g): every query sees the global keys
        return Cover(-1.0, -1.0, 1, extras, torch.isin(q_pos, g))


class RandomKeys(AttentionGraph):
    """``r`` keys per query, drawn by a hash of (seed, i, k), k < r: among all n keys, or
    (``causal``) among the keys 0..i. The same positions give the same keys at every length,
    so cached decoding and recomputation agree."""

    def __init__(self, r: int, seed: int = 0, *, causal: bool = False) -> None:
        _positive("r", r)
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"random_keys: seed must be an int >= 0, got {seed!r}")
        self.r, self.seed, self.is_causal = r, seed, causal
        self.spec = f"random:{r}:{seed}" + (":causal" if causal else "")

    def keys(self, i: Tensor, n: int) -> Tensor:
        """(..., r) the key positions drawn for query positions i (...)."""
        k = torch.arange(self.r, device=i.device)
        h = _mix(_mix(i[..., None] * 40503 + k * 9973 + self.seed * 65537))
        bound = (i[..., None] + 1) if self.is_causal else n
        return h % bound

    def allows(self, i, j, n):
        keys = self.keys(i, n)  # (i's shape, r): drawn before broadcasting against j
        hit = keys[..., 0] == j
        for k in range(1, self.r):
            hit = hit | (keys[..., k] == j)
        return hit

    def cover(self, q_pos, k_pos):
        n = int(k_pos[-1]) + 1 if k_pos.numel() else 0
        return Cover(-1.0, -1.0, 1, self.keys(q_pos, max(n, 1)), _no_rows(q_pos))

    def causal(self):
        return RandomKeys(self.r, self.seed, causal=True)


class EdgeGraph(AttentionGraph):
    """A graph given by its edges among ``num_nodes`` positions (PyTorch Geometric's
    ``edge_index``: row 0 the source j, row 1 the target i; messages j -> i)."""

    def __init__(self, edge_index: Tensor, num_nodes: int) -> None:
        edge_index = torch.as_tensor(edge_index)
        if edge_index.dim() != 2 or edge_index.shape[0] != 2 or edge_index.is_floating_point():
            raise ValueError(
                "from_edge_index: edge_index must be a (2, E) integer tensor (row 0 source j, "
                f"row 1 target i), got dtype={edge_index.dtype} shape={tuple(edge_index.shape)}"
            )
        if not isinstance(num_nodes, int) or num_nodes < 1:
            raise ValueError(f"from_edge_index: num_nodes must be an int >= 1, got {num_nodes!r}")
        edge_index = edge_index.long()
        if edge_index.numel() and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
            raise ValueError(
                f"from_edge_index: node ids must be in [0, {num_nodes}), got "
                f"[{int(edge_index.min())}, {int(edge_index.max())}]"
            )
        self.num_nodes = num_nodes
        self.codes = torch.unique(edge_index[1] * num_nodes + edge_index[0])  # sorted i·n + j
        self.spec = {
            "edges": [(self.codes % num_nodes).tolist(), (self.codes // num_nodes).tolist()],
            "num_nodes": num_nodes,
        }

    def node_count(self) -> int:
        return self.num_nodes

    @property
    def edge_list(self) -> Tensor:
        """(2, E) the edges, sorted by target then source, without repeats."""
        return torch.stack([self.codes % self.num_nodes, self.codes // self.num_nodes])

    def allows(self, i, j, n):
        i, j = torch.broadcast_tensors(i, j)
        n_nodes, codes = self.num_nodes, self.codes.to(i.device)
        inside = (i >= 0) & (i < n_nodes) & (j >= 0) & (j < n_nodes)
        if codes.numel() == 0:
            return torch.zeros_like(inside)
        code = (i * n_nodes + j).clamp(0, n_nodes * n_nodes - 1)
        at = torch.searchsorted(codes, code).clamp(max=codes.numel() - 1)
        return inside & (codes[at] == code)

    def cover(self, q_pos, k_pos):
        # every query's in-neighbours as extra keys (E is small for a graph given by its edges)
        src, dst = self.edge_list.to(q_pos.device)
        degree = torch.bincount(dst, minlength=self.num_nodes)
        width = int(degree.max()) if degree.numel() else 0
        table = torch.full((self.num_nodes, width), -1, dtype=torch.long, device=q_pos.device)
        first = torch.cumsum(degree, 0) - degree  # where each target's edges start
        table[dst, torch.arange(dst.numel(), device=dst.device) - first[dst]] = src
        inside = (q_pos >= 0) & (q_pos < self.num_nodes)
        extras = torch.full((q_pos.numel(), width), -1, dtype=torch.long, device=q_pos.device)
        extras[inside] = table[q_pos[inside]]
        return Cover(-1.0, -1.0, 1, extras, _no_rows(q_pos))

    def edges_at(self, q_pos, k_pos, offset=0):
        src, dst = self.edge_list.to(q_pos.device)
        t, s = q_pos.numel(), k_pos.numel()
        if t == 0 or s == 0:
            return torch.empty(2, 0, dtype=torch.long, device=q_pos.device)
        q0, k0 = int(q_pos[0]), int(k_pos[0])
        keep = (dst >= q0) & (dst < q0 + t) & (src >= k0) & (src < k0 + s)
        return torch.stack([src[keep] - k0, dst[keep] - q0 + offset])


# Helpers ---------------------------------------------------------------------------------------
def _positive(name: str, v) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name} must be an int >= 1, got {v!r}")


def _no_rows(q_pos: Tensor) -> Tensor:
    return torch.zeros(q_pos.numel(), dtype=torch.bool, device=q_pos.device)


def _mix(x: Tensor) -> Tensor:
    """A hash of int64 values to [0, 2^31): a multiplicative mix that cannot overflow."""
    x = x % 2147483647
    return (x * 48271 + (x >> 7)) % 2147483647


# Constructors -------------------------------------------------------------------------------------
FULL = Band(INF, INF)
CAUSAL = Band(INF, 0)


def full() -> Band:
    """Every query attends every key: a transformer is a GNN on the complete graph."""
    return FULL


def causal() -> Band:
    """Key j <= query i: the decoder's mask, a GNN on the graph of edges from the past."""
    return CAUSAL


def sliding_window(w: int, *, causal: bool = False) -> Band:
    """|i - j| < w (2w - 1 keys); ``causal``: 0 <= i - j < w, the w latest positions."""
    _positive("w", w)
    return Band(w - 1, 0 if causal else w - 1)


def dilated(w: int, d: int, *, causal: bool = False) -> Band:
    """i - j a multiple of d with |i - j| < w·d: w keys on each side, d positions apart."""
    _positive("w", w)
    _positive("d", d)
    return Band((w - 1) * d, 0 if causal else (w - 1) * d, d)


def self_loops() -> Band:
    """Each position attends itself (and nothing else): the self-loops a GNN adds."""
    return Band(0, 0)


def strided(stride: int) -> Union:
    """Sparse Transformer's strided attention (Child et al. 2019), both heads' patterns in one
    graph: the previous ``stride`` positions, and every ``stride``-th position."""
    _positive("stride", stride)
    return Union(sliding_window(stride), Band(INF, INF, stride), spec=f"strided:{stride}")


def global_tokens(idx: Iterable[int] | int) -> GlobalTokens:
    """Positions that attend everywhere and are attended from everywhere (Longformer)."""
    return GlobalTokens([idx] if isinstance(idx, int) else idx)


def random_keys(r: int, seed: int = 0, *, causal: bool = False) -> RandomKeys:
    """``r`` pseudo-random keys per query, reproducible from ``seed``."""
    return RandomKeys(r, seed, causal=causal)


def bigbird(w: int, n_global: int, n_random: int, seed: int = 0) -> Union:
    """BigBird (Zaheer et al. 2020) at the level of positions: a sliding window of w, the first
    ``n_global`` positions global, ``n_random`` random keys per query."""
    _positive("w", w)
    parts = [sliding_window(w)]
    if n_global:
        parts.append(global_tokens(range(n_global)))
    if n_random:
        parts.append(random_keys(n_random, seed))
    return Union(*parts, spec=f"bigbird:{w}:{n_global}:{n_random}:{seed}")


def from_edge_index(edge_index: Tensor, num_nodes: int | None = None) -> EdgeGraph:
    """A graph from PyTorch Geometric's ``edge_index`` (2, E): messages from row 0 (source j)
    to row 1 (target i). ``num_nodes`` defaults to the largest id + 1."""
    edge_index = torch.as_tensor(edge_index)
    if num_nodes is None:
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 1
    return EdgeGraph(edge_index, num_nodes)


def from_adjacency(adjacency: Tensor) -> EdgeGraph:
    """A graph from an (N, N) bool matrix, ``adjacency[i, j]`` True when query i attends key j
    (the orientation of ``AttentionGraph.mask``)."""
    a = torch.as_tensor(adjacency)
    if a.dim() != 2 or a.shape[0] != a.shape[1] or a.dtype != torch.bool:
        raise ValueError(
            f"from_adjacency: need a square bool matrix, got dtype={a.dtype} shape={tuple(a.shape)}"
        )
    i, j = a.nonzero(as_tuple=True)
    return EdgeGraph(torch.stack([j, i]), a.shape[0])


def from_networkx(graph) -> EdgeGraph:
    """The edges of a networkx graph whose nodes are 0..N-1 (``nx.convert_node_labels_to_
    integers`` makes them so); an undirected edge passes messages both ways."""
    nodes = list(graph.nodes)
    if set(nodes) != set(range(len(nodes))):
        raise ValueError(
            "from_networkx: the nodes must be 0..N-1; relabel them with "
            "networkx.convert_node_labels_to_integers(G)"
        )
    edges = [(u, v) for u, v in graph.edges]
    if not graph.is_directed():
        edges += [(v, u) for u, v in edges]
    ei = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t()
    return EdgeGraph(ei, max(len(nodes), 1))
