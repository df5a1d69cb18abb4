"""Pictures (PNG) of the attention that ``capture`` recorded: its weights and its masks.

    plot_attention   a grid of attention heatmaps, layers × heads, tokens on both axes
    plot_head        one head enlarged, the weights written in the cells when they fit
    plot_masks       the masks applied: causal + padding for self-attention, + cross-attention

Attention cells show A_nm = e^{â_nm} / Z_n (Eq. 3) on a fixed 0..1 scale; masked cells
(b_nm = -inf, so A_nm = 0 exactly) are grey. ``tokens`` labels the positions: a list of
strings, or {stack: list} for an encoder-decoder ({"encoder": source, "decoder": target}),
whose cross-attention keys take the encoder's labels; a space shows as "␣" in every picture.
Without ``figsize`` a figure is wide enough for its title. matplotlib is an optional
dependency (``pip install 'glassformer[plot]'``); every function returns a ``Picture``.
The residual stream and the positional encoding are drawn by stream_plots.py
(``plot_residual``, ``plot_positional``, also importable from here).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import Tensor

from ._draw import (
    Picture,
    fit_width,
    label_ticks,
    new_figure,
    require_matplotlib,
    save,
)
from .capture import Recording
from .selection import (
    Tokens,
    axis_labels,
    check_index,
    first_record,
    has_attention,
    pick,
    select,
)
from .stream_plots import plot_positional, plot_residual

__all__ = ["Picture", "plot_attention", "plot_head", "plot_masks", "plot_positional"]
__all__ += ["plot_residual", "require_matplotlib"]

PathLike = str | os.PathLike[str]
MASK_COLORS = {"may attend": "#3b7dc4", "future (causal)": "#f28e2b", "padding": "#d4d4d4"}
MASKED_GREY = MASK_COLORS["padding"]  # masked cells of the attention heatmaps


def plot_attention(
    rec: Recording,
    path: PathLike,
    *,
    kind: str = "self",
    stack: str | None = None,
    call: int | None = 0,
    example: int = 0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    tokens: Tokens = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """A grid of heatmaps, one row per layer and one column per head; queries down the
    side, keys along the bottom. ``call=None`` puts the steps of a KV-cache run together."""
    w, allowed, name = select(rec, kind, stack, call)
    example = check_index("example", example, w.shape[1])
    layers = pick("layers", layers, w.shape[0])
    heads = pick("heads", heads, w.shape[2])
    queries, keys = axis_labels(rec, kind, name, call, w.shape[3], w.shape[4], tokens)
    side = _panel_inches(max(len(queries), len(keys)), 1.3, 3.2)
    size = figsize or (len(heads) * side + 1.6, len(layers) * side + 1.1)
    fig = new_figure(size, dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(len(layers), len(heads), squeeze=False)
    font = _font(max(len(queries), len(keys)), 8.0)
    axes, image = {}, None
    for i, layer in enumerate(layers):
        for j, head in enumerate(heads):
            ax = grid[i][j]
            image = _heatmap(ax, w[layer, example, head], allowed[layer, example, head])
            ax.set_title(f"layer {layer} · head {head}", fontsize=8)
            _ticks(ax, queries if j == 0 else None, keys if i == len(layers) - 1 else None, font)
            axes[f"layer {layer} head {head}"] = ax
    fig.colorbar(image, ax=grid, shrink=0.6, label="A_nm")
    title = f"{name} {kind}-attention weights A = softmax(QKᵀ/√d_k), Eq. (1)"
    fit_width(fig, fig.suptitle(title, fontsize=10), figsize)
    return save(fig, path, axes)


def plot_head(
    rec: Recording,
    path: PathLike,
    *,
    layer: int = 0,
    head: int = 0,
    kind: str = "self",
    stack: str | None = None,
    call: int | None = 0,
    example: int = 0,
    tokens: Tokens = None,
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """One head enlarged; ``annotate`` (default: when at most 20 positions) writes A_nm."""
    w, allowed, name = select(rec, kind, stack, call)
    example = check_index("example", example, w.shape[1])
    layer = check_index("layer", layer, w.shape[0])
    head = check_index("head", head, w.shape[2])
    queries, keys = axis_labels(rec, kind, name, call, w.shape[3], w.shape[4], tokens)
    n = max(len(queries), len(keys))
    side = _panel_inches(n, 4.0, 11.0, per_cell=0.38)
    fig = new_figure(figsize or (side + 1.8, side + 1.2), dpi)
    fig.set_layout_engine("constrained")
    ax = fig.subplots()
    a, ok = w[layer, example, head], allowed[layer, example, head]
    image = _heatmap(ax, a, ok)
    _ticks(ax, queries, keys, _font(n, 9.0))
    if annotate if annotate is not None else n <= 20:
        for (q, k), value in zip(ok.nonzero().tolist(), a[ok].tolist(), strict=True):
            color = "black" if value > 0.6 else "white"
            ax.text(k, q, f"{value:.2f}", ha="center", va="center", fontsize=7, color=color)
    ax.set_xlabel("key m")
    ax.set_ylabel("query n")
    fig.colorbar(image, ax=ax, shrink=0.8, label="A_nm")
    title = f"{name} layer {layer}, head {head}: {kind}-attention A_nm = e^(â_nm) / Z_n"
    fit_width(fig, ax.set_title(title, fontsize=10), figsize)
    return save(fig, path, {f"layer {layer} head {head}": ax})


def plot_masks(
    rec: Recording,
    path: PathLike,
    *,
    call: int | None = 0,
    example: int = 0,
    tokens: Tokens = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The mask each attention applied (layer 0, head 0: glassformer masks are the same for
    every layer and head), one panel per stack and kind: blue = may attend (b_nm = 0),
    orange = a future position (causal mask), grey = masked otherwise (padding)."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    panels = [(s, k) for s in rec.stacks for k in ("self", "cross") if has_attention(rec, s, k)]
    if not panels:
        raise ValueError("the recording holds no attention: run the model inside capture()")
    sizes = []
    for stack, kind in panels:
        w, allowed, _ = select(rec, kind, stack, call)
        sizes.append((allowed, axis_labels(rec, kind, stack, call, w.shape[3], w.shape[4], tokens)))
    example = check_index("example", example, sizes[0][0].shape[1])
    side = _panel_inches(max(max(len(q), len(k)) for _, (q, k) in sizes), 2.4, 6.0, 0.3)
    fig = new_figure(figsize or (len(panels) * (side + 0.9) + 0.4, side + 1.6), dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(1, len(panels), squeeze=False)[0]
    cmap = ListedColormap(list(MASK_COLORS.values()))
    axes = {}
    for ax, (stack, kind), (allowed, (queries, keys)) in zip(grid, panels, sizes, strict=True):
        record = first_record(rec, kind, stack, call)
        ok = allowed[0, example, 0]  # (T, S)
        offset = 0 if call is None else record.offset
        category = _mask_categories(ok, record.causal, offset)
        ax.imshow(
            category.numpy(), cmap=cmap, vmin=0, vmax=2, aspect="auto", interpolation="nearest"
        )
        _ticks(ax, queries, keys, _font(max(len(queries), len(keys)), 8.0))
        causal = ", causal" if record.causal else ""
        ax.set_title(f"{stack} {kind}-attention{causal}", fontsize=9)
        ax.set_xlabel("key m")
        ax.set_ylabel("query n")
        axes[f"{stack} {kind}"] = ax
    handles = [Patch(color=c, label=label) for label, c in MASK_COLORS.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8)
    title = "masks b_nm as applied: â_nm = a_nm + b_nm, b_nm ∈ {0, −∞}"
    fit_width(fig, fig.suptitle(title, fontsize=10), figsize)
    return save(fig, path, axes)


# Drawing -------------------------------------------------------------------------------------
def _heatmap(ax, weights: Tensor, allowed: Tensor):
    import numpy as np
    from matplotlib import colormaps

    cmap = colormaps["viridis"].with_extremes(bad=MASKED_GREY)
    data = np.ma.masked_array(weights.numpy(), mask=~allowed.numpy())
    return ax.imshow(data, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")


def _ticks(ax, queries: list[str] | None, keys: list[str] | None, font: float) -> None:
    if queries is None:
        ax.set_yticks([])
    else:
        label_ticks(ax, "y", queries, font)
    if keys is None:
        ax.set_xticks([])
    else:
        label_ticks(ax, "x", keys, font)


def _mask_categories(allowed: Tensor, causal: bool, offset: int) -> Tensor:
    """(T, S): 0 may attend, 1 masked as a future position (m > n + offset), 2 masked else."""
    t, s = allowed.shape
    future = torch.arange(s)[None, :] > torch.arange(t)[:, None] + offset  # (T, S)
    category = torch.full((t, s), 2)
    category[future & torch.tensor(causal)] = 1
    category[allowed] = 0
    return category


def _panel_inches(n: int, low: float, high: float, per_cell: float = 0.16) -> float:
    return min(high, max(low, per_cell * n + 0.6))


def _font(n: int, largest: float) -> float:
    return max(4.0, min(largest, 220.0 / max(n, 1)))
