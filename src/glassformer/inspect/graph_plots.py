"""Pictures (PNG) of the GNN view (Formal Algorithms for Transformers, "Transformers as GNNs").

    plot_graph             each layer's attention graph as its (T, S) adjacency: row i, column
                           j filled when query i receives key j (the edge j -> i)
    plot_attention_graph   a learned attention pattern as a weighted graph: the tokens as nodes,
                           an edge j -> i for each A_ij above a threshold, wider for larger A_ij
    plot_receptive_field   which inputs one output can depend on after each layer, (L, T)

What they draw comes from graph_view.py (``graph_panels``, ``weighted_edges``,
``receptive_grid``). matplotlib is an optional dependency (``pip install 'glassformer[plot]'``);
every function returns a ``Picture``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from ._draw import Picture, fit_width, label_ticks, new_figure, save, token_label
from .capture import Recording
from .graph_view import Graphs, attention_patterns, graph_panels, receptive_grid, weighted_edges
from .selection import axis_labels, first_record, labels_for

__all__ = ["EDGE", "NO_EDGE", "plot_attention_graph", "plot_graph", "plot_receptive_field"]
__all__ += ["spec_text"]

PathLike = str | os.PathLike[str]
EDGE, NO_EDGE, SELF = "#3b7dc4", "#eeeeee", "#f28e2b"  # an edge (or dependence), none, itself
ARC, LOOP = 0.3, 0.2  # an arc's height per position it spans; a self-loop's radius
MAX_INCHES = 40.0  # the widest default figure (a long input: the labels thin out, see _draw)


def plot_graph(
    graphs: Graphs,
    path: PathLike,
    *,
    t: int,
    s: int | None = None,
    cross: bool = False,
    tokens: Sequence[str] | None = None,
    key_tokens: Sequence[str] | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The attention graph of each layer (``glassformer.inspect.attention_graphs(model)``, or
    any AttentionGraphs) on T positions, one panel per run of layers with the same graph.
    ``cross``: T target positions attend S source positions (``key_tokens`` label them)."""
    from matplotlib.colors import ListedColormap

    panels = graph_panels(graphs, t, s, cross=cross)
    s = t if s is None else s
    queries = labels_for(tokens, "queries", t)
    keys = labels_for(key_tokens, "keys", s) if cross else queries
    side = min(6.0, max(2.6, 0.16 * max(t, s) + 0.8))
    fig = new_figure(figsize or (len(panels) * (side + 0.5) + 0.6, side + 1.4), dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(1, len(panels), squeeze=False)[0]
    font = _font(max(t, s))
    axes = {}
    for ax, panel in zip(grid, panels, strict=True):
        image = panel.mask.int().numpy()
        ax.imshow(image, cmap=ListedColormap([NO_EDGE, EDGE]), vmin=0, vmax=1, aspect="auto")
        label_ticks(ax, "y", queries, font)
        label_ticks(ax, "x", keys, font)
        ax.set_xlabel("key j (source)")
        ax.set_ylabel("query i (target)")
        edges = int(panel.mask.sum())
        ax.set_title(f"{panel.name}: {spec_text(panel.graph)}\n{edges} edges", fontsize=8)
        axes[panel.name] = ax
    what = "cross-attention" if cross else "attention"
    title = title or f"{what} graph per layer: query i receives key j along the edge j → i"
    fit_width(fig, fig.suptitle(title, fontsize=10), figsize)
    return save(fig, path, axes)


def plot_attention_graph(
    source: Recording | torch.Tensor,
    path: PathLike,
    *,
    layers: Sequence[int] | None = None,
    heads: int | Sequence[int] | None = None,
    kind: str = "self",
    stack: str | None = None,
    example: int = 0,
    call: int = 0,
    threshold: float = 0.1,
    tokens=None,
    key_tokens: Sequence[str] | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The learned weights A as a weighted graph, one panel per layer: each token a node, an
    edge j -> i for each A_ij > ``threshold``, its width and opacity growing with A_ij; of one
    head, or the mean over ``heads`` (default all). Self-attention puts the tokens on a line:
    arcs above come from an earlier token, arcs below from a later one, a loop from the token
    itself. Cross-attention puts the source (keys) below and the target (queries) above.

    ``source``: a Recording (``tokens`` as in plots.py: a list, or {stack: list}), or weights
    as a tensor (see ``attention_patterns``; ``tokens`` labels the key positions of
    self-attention, the queries of cross-attention, and ``key_tokens`` its keys)."""
    a, chosen = attention_patterns(
        source, layers=layers, heads=heads, kind=kind, stack=stack, example=example, call=call
    )
    t, s = a.shape[1:]
    if isinstance(source, Recording):
        name = first_record(source, kind, stack, call).stack
        queries, keys = axis_labels(source, kind, name, call, t, s, tokens)
        where = f"{name} {kind}-attention"
    else:
        own = labels_for(tokens, "tokens", s if kind == "self" else t)
        queries, keys = (own[s - t :], own) if kind == "self" else (own, None)
        keys = keys if keys is not None else labels_for(key_tokens, "key_tokens", s)
        where = f"{kind}-attention"
    per_layer = isinstance(source, Recording) or source.dim() == 5
    edges = [weighted_edges(pattern, threshold) for pattern in a]
    n = max(t, s)
    width = min(MAX_INCHES, max(6.0, 0.32 * n + 1.5))
    if kind == "self":  # arcs as high as ARC x the edge's span, on an equal-aspect panel
        spans = [_reach(edge_index, s - t) for edge_index, _ in edges]
        reach = (max(b for b, _ in spans), max(a for _, a in spans))  # (below, above)
        rows = (width - 0.4) * sum(reach) / (n + 0.6) + 1.0
    else:
        rows = width * 0.25 + 0.6
    fig = new_figure(figsize or (width, len(chosen) * rows + 0.5), dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(len(chosen), 1, squeeze=False)[:, 0]
    one_head = isinstance(source, torch.Tensor) and source.dim() == 2
    head_text = "the pattern" if one_head else _heads_text(heads)
    axes = {}
    for ax, layer, (edge_index, weight) in zip(grid, chosen, edges, strict=True):
        if kind == "self":
            _draw_line_graph(ax, edge_index, weight, keys, s - t, reach)
        else:
            _draw_bipartite(ax, edge_index, weight, queries, keys)
        head = f"layer {layer} · {head_text}" if per_layer else head_text
        ax.set_title(f"{head} · {len(weight)} edges with A_ij > {threshold:g}", fontsize=8)
        axes[f"layer {layer}" if per_layer else "pattern"] = ax
    title = f"{where} as a weighted graph: an edge j → i where A_ij > {threshold:g}"
    fit_width(fig, fig.suptitle(title + " (width ∝ A_ij)", fontsize=10), figsize)
    return save(fig, path, axes)


def plot_receptive_field(
    graphs: Graphs,
    path: PathLike,
    *,
    t: int,
    position: int = -1,
    tokens: Sequence[str] | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """Row l: the inputs the output at ``position`` can depend on after layers 0..l (the
    boolean product of the layers' graphs plus the residual's self-loops: a GNN's
    (l + 1)-hop neighbourhood); the position itself is outlined."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Rectangle

    grid = receptive_grid(graphs, t, position)  # (L, T)
    position %= t
    labels = labels_for(tokens, "tokens", t)
    n_layers = grid.shape[0]
    size = (min(MAX_INCHES, max(5.0, 0.2 * t + 2.5)), 0.3 * n_layers + 2.0)
    fig = new_figure(figsize or size, dpi)
    fig.set_layout_engine("constrained")
    ax = fig.subplots()
    ax.imshow(grid.int().numpy(), cmap=ListedColormap([NO_EDGE, EDGE]), vmin=0, vmax=1)
    ax.set_aspect("auto")
    ax.add_patch(Rectangle((position - 0.5, -0.5), 1, n_layers, fill=False, ec=SELF, lw=2))
    rows = [f"after layer {layer} ({int(k)})" for layer, k in enumerate(grid.sum(1))]
    ax.set_yticks(range(n_layers), rows, fontsize=_font(n_layers))
    label_ticks(ax, "x", labels, _font(t))
    ax.set_xlabel("input position j (in brackets: how many inputs)")
    title = title or (
        f"receptive field of position {position} ({token_label(labels[position])!r}): "
        "the inputs it can depend on through the layers"
    )
    fit_width(fig, fig.suptitle(title, fontsize=10), figsize)
    return save(fig, path, {"receptive field": ax})


# Drawing -------------------------------------------------------------------------------------
def _reach(edge_index, offset: int) -> tuple[float, float]:
    """How far below and above the line the arcs of these edges go (from later keys, from
    earlier keys and self-loops), with a margin."""
    span = edge_index[1] + offset - edge_index[0]  # i - j: > 0 from an earlier key
    below = ARC * int(-span.min()) if span.numel() and span.min() < 0 else 0.0
    above = max(ARC * int(span.max()), 2 * LOOP) if span.numel() else 0.0
    return below + 0.3, above + 0.3


def _draw_line_graph(ax, edge_index, weight, labels: list[str], offset: int, reach) -> None:
    """Nodes 0..S-1 on a line; the edge j -> i (i a query index, at position i + offset) as an
    arc of height ∝ |i - j|: above when j is earlier, below when later; a loop when j = i."""
    import numpy as np
    from matplotlib.patches import Circle

    n = len(labels)
    curve = np.linspace(0.0, 1.0, 24)
    for (j, i), w in zip(edge_index.t().tolist(), weight.tolist(), strict=True):
        i += offset
        style = _edge_style(w)
        if i == j:
            ax.add_patch(Circle((i, LOOP), LOOP, fill=False, **style))
            continue
        side = 1.0 if j < i else -1.0
        xs = j + (i - j) * curve
        ys = side * ARC * abs(i - j) * 4 * curve * (1 - curve)
        ax.plot(xs, ys, solid_capstyle="round", **style)
        ax.annotate("", (xs[-1], ys[-1]), (xs[-3], ys[-3]), arrowprops=_arrow(style))
    ax.scatter(range(n), [0] * n, s=30, c="white", edgecolors="black", zorder=3)
    ax.set_xlim(-0.8, n - 0.2)
    ax.set_ylim(-reach[0], reach[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_yticks([])
    label_ticks(ax, "x", labels, _font(n))
    for spine in ax.spines.values():
        spine.set_visible(False)


def _draw_bipartite(ax, edge_index, weight, queries: list[str], keys: list[str]) -> None:
    """Keys (source) on the bottom line, queries (target) on the top; the edge j -> i a line."""
    t, s = len(queries), len(keys)
    n = max(t, s)
    qx = [i + (n - t) / 2 for i in range(t)]
    kx = [j + (n - s) / 2 for j in range(s)]
    for (j, i), w in zip(edge_index.t().tolist(), weight.tolist(), strict=True):
        style = _edge_style(w)
        ax.annotate("", (qx[i], 1.0), (kx[j], 0.0), arrowprops=_arrow(style, "-|>"))
    ax.scatter(kx + qx, [0.0] * s + [1.0] * t, s=30, c="white", edgecolors="black", zorder=3)
    ax.set_xlim(-0.8, n - 0.2)
    ax.set_ylim(-0.15, 1.15)
    ax.set_yticks([0, 1], ["key j", "query i"], fontsize=8)
    font = _font(n)
    ax.set_xticks(kx, [token_label(k) for k in keys], fontsize=font, rotation=90)
    top = ax.secondary_xaxis("top")
    top.set_xticks(qx, [token_label(q) for q in queries], fontsize=font, rotation=90)
    top.spines["top"].set_visible(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _edge_style(w: float) -> dict:
    return {"color": EDGE, "lw": 0.4 + 3.6 * w, "alpha": 0.2 + 0.8 * w}


def _arrow(style: dict, arrowstyle: str = "-|>") -> dict:
    return {
        "arrowstyle": arrowstyle,
        "color": style["color"],
        "lw": style["lw"],
        "alpha": style["alpha"],
        "shrinkA": 0,
        "shrinkB": 4,
        "mutation_scale": 6 + 6 * style["lw"] / 4,
    }


def _heads_text(heads) -> str:
    if heads is None:
        return "mean over heads"
    heads = [heads] if isinstance(heads, int) else list(heads)
    if len(heads) == 1:
        return f"head {heads[0]}"
    return "mean of heads " + ", ".join(map(str, heads))


def spec_text(graph) -> str:
    """A graph's spec as a short label ("window:3:causal"; an edge list is not spelled out)."""
    spec = graph.spec
    if not isinstance(spec, str):
        return "a graph given by its edges"
    return spec if len(spec) <= 40 else spec[:39] + "…"


def _font(n: int) -> float:
    return max(4.0, min(8.0, 220.0 / max(n, 1)))
