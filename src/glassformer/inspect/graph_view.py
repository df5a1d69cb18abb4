"""The GNN view of a model, as data (Formal Algorithms for Transformers, "Transformers as GNNs").

Attention is message passing on a graph: query i receives the value of key j along the edge
j -> i, weighted by A_ij. This module says what the pictures of graph_plots.py draw:

    attention_graphs(model, stack, kind)   the graph each layer attends along, as applied
    graph_panels(graphs, t, s)             the layers' (T, S) adjacency, equal layers together
    attention_patterns(source, ...)        learned weights A (L, T, S), one head or a mean
    weighted_edges(pattern, threshold)     the edges j -> i with A_ij > threshold, and A_ij
    receptive_grid(graphs, t, position)    which inputs one output depends on after 1..L layers
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..graphs import AttentionGraph, causal, full, receptive_fields
from .capture import Recording
from .selection import check_index, pick
from .taps import find_stacks, is_decoder_stack

__all__ = ["GraphPanel", "attention_graphs", "attention_patterns", "graph_panels"]
__all__ += ["receptive_grid", "stacks_of", "weighted_edges"]

Graphs = AttentionGraph | Sequence[AttentionGraph | None]


def stacks_of(model: nn.Module) -> dict[str, nn.Module]:
    """The model's stacks of blocks by name, named as ``capture`` names them (a DecoderLM's is
    the model itself, "decoder"; an encoder-decoder's "encoder" and "decoder")."""
    stacks = dict(find_stacks(model))
    if not stacks:
        raise ValueError(f"{type(model).__name__} has no glassformer Encoder or Decoder stack")
    return stacks


def attention_graphs(
    model: nn.Module, stack: str | None = None, kind: str = "self"
) -> list[AttentionGraph]:
    """The graph each layer of ``stack`` attends along, as the model applies it: the block's
    graph (the complete graph when it has none), made causal in a decoder's self-attention;
    ``kind="cross"``: the cross-attention graphs (target positions attend source positions)."""
    stacks = stacks_of(model)
    if stack is None:
        if len(stacks) > 1:
            raise ValueError(f"stack=None is ambiguous: pass one of {tuple(stacks)}")
        stack = next(iter(stacks))
    if stack not in stacks:
        raise ValueError(f"stack={stack!r} is not a stack of the model; allowed {tuple(stacks)}")
    module = stacks[stack]
    if kind == "self":
        is_causal = is_decoder_stack(module)
        graphs = [b.graph for b in module.blocks]
        if is_causal:
            return [causal() if g is None else g.causal() for g in graphs]
        return [full() if g is None else g for g in graphs]
    if kind != "cross":
        raise ValueError(f"kind={kind!r} is not known; allowed ('self', 'cross')")
    if not all(getattr(b, "cross_attn", None) is not None for b in module.blocks):
        raise ValueError(f"kind='cross': the {stack} has no cross-attention")
    return [full() if b.cross_graph is None else b.cross_graph for b in module.blocks]


@dataclass(frozen=True)
class GraphPanel:
    """Consecutive ``layers`` that share one ``graph``, and its (T, S) bool ``mask``:
    mask[i, j] True when query i receives key j (the edge j -> i)."""

    layers: tuple[int, ...]
    graph: AttentionGraph
    mask: Tensor

    @property
    def name(self) -> str:
        first, last = self.layers[0], self.layers[-1]
        return f"layer {first}" if first == last else f"layers {first}-{last}"


def graph_panels(graphs: Graphs, t: int, s: int | None = None, *, cross: bool = False):
    """One GraphPanel per run of consecutive layers with the same graph, on T query and S key
    positions (self-attention: S = T, the same positions; ``cross``: queries at target
    positions 0..T-1, keys at source positions 0..S-1)."""
    graphs = _graph_list(graphs)
    s = t if s is None else s
    if not cross and s != t:
        raise ValueError(f"self-attention has as many keys as queries; got t={t}, s={s}")
    panels: list[GraphPanel] = []
    for layer, g in enumerate(graphs):
        if panels and panels[-1].graph == g:
            last = panels[-1]
            panels[-1] = GraphPanel((*last.layers, layer), last.graph, last.mask)
            continue
        mask = g.mask(t, s, query_start=0) if cross else g.mask(t)
        panels.append(GraphPanel((layer,), g, mask))
    return panels


def attention_patterns(
    source: Recording | Tensor,
    *,
    layers: Sequence[int] | None = None,
    heads: int | Sequence[int] | None = None,
    kind: str = "self",
    stack: str | None = None,
    example: int = 0,
    call: int = 0,
) -> tuple[Tensor, list[int]]:
    """(A (L', T, S) float on the CPU, the layer indices): the learned weights of the chosen
    layers for one example, of one head or the mean over ``heads`` (default: all heads).

    ``source``: a Recording, or weights as a tensor: (L, B, H, T, S) (``rec.weights()``),
    one layer's (B, H, T, S) (``cache["pattern", l]`` of ``run_with_cache``), (H, T, S) or
    (T, S)."""
    if isinstance(source, Recording):
        w = source.weights(kind, stack, call)
    elif isinstance(source, Tensor) and 2 <= source.dim() <= 5:
        w = source.reshape((1,) * (5 - source.dim()) + tuple(source.shape))
    else:
        raise ValueError(
            "attention_patterns: source must be a Recording or a tensor of weights (L, B, H, "
            f"T, S), (B, H, T, S), (H, T, S) or (T, S); got {_describe(source)}"
        )
    chosen = pick("layers", layers, w.shape[0])
    example = check_index("example", example, w.shape[1])
    picked = pick("heads", [heads] if isinstance(heads, int) else heads, w.shape[2])
    a = w[chosen, example][:, picked].float().mean(1)  # (L', T, S)
    return a.detach().cpu(), chosen


def weighted_edges(pattern: Tensor, threshold: float = 0.1) -> tuple[Tensor, Tensor]:
    """The learned attention as a weighted graph: (edge_index (2, E) long, weight (E,)) for
    every A_ij > ``threshold`` of a (T, S) pattern, PyTorch Geometric's convention (row 0 the
    key j, the source; row 1 the query i, the target; the message j -> i), sorted by (i, j)."""
    if not (isinstance(threshold, int | float) and 0 <= threshold < 1):
        raise ValueError(f"threshold={threshold!r} is not allowed: a number in [0, 1)")
    if not isinstance(pattern, Tensor) or pattern.dim() != 2:
        got = _describe(pattern)
        raise ValueError(f"weighted_edges: pattern must be a (T, S) tensor, got {got}")
    i, j = (pattern > threshold).nonzero(as_tuple=True)  # row-major: sorted by (i, j)
    return torch.stack([j, i]), pattern[i, j]


def receptive_grid(graphs: Graphs, t: int, position: int = -1) -> Tensor:
    """(L, T) bool: row l - 1 says which inputs the output at ``position`` (negative: from
    the end) can depend on after layers 1..l (``glassformer.graphs.receptive_fields``)."""
    graphs = _graph_list(graphs)
    if not graphs:
        raise ValueError("receptive_grid: no layers (graphs=[])")
    if isinstance(position, bool) or not isinstance(position, int) or not -t <= position < t:
        raise ValueError(f"position={position!r} is out of range: allowed 0..{t - 1} (or -{t}..-1)")
    return torch.stack([field[position] for field in receptive_fields(graphs, t)])


def _graph_list(graphs: Graphs) -> list[AttentionGraph]:
    items = [graphs] if isinstance(graphs, AttentionGraph) else list(graphs)
    for g in items:
        if g is not None and not isinstance(g, AttentionGraph):
            raise ValueError(f"graphs: expected AttentionGraph (or None: full), got {g!r}")
    return [full() if g is None else g for g in items]


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return type(value).__name__
