"""Pictures (PNG) of circuit analysis ("Brief Notes on Transformers": the attention layer as a
sum of heads, H(x) = Σ_j h_j(x); Elhage et al. (2021), "A Mathematical Framework for
Transformer Circuits"), drawn from plain tensors, so that any computation can be shown:

    plot_head_attribution  a value per head, layers × heads (e.g. each head's direct logit
                           attribution), on a diverging scale centred on 0, values written in
    plot_logit_lens        the top-k tokens read from each layer's residual stream, a row per
                           layer, each cell a token and its probability
    plot_singular_values   the singular values of each head's OV or QK matrix, a line per head
                           (one panel per layer), on a log scale by default
    plot_patching          the metric after activation patching, layers × positions (tokens
                           along the bottom) or layers × heads, on a diverging scale

matplotlib is an optional dependency (``pip install 'glassformer[plot]'``), imported when a
picture is drawn; every function writes a PNG (atomically) and returns a ``Picture``, whose
``path`` is the file and whose ``panels`` give each matrix's pixel box.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ._draw import Picture, fit_width, label_ticks, new_figure, save, token_label

__all__ = [
    "plot_head_attribution",
    "plot_logit_lens",
    "plot_patching",
    "plot_singular_values",
]

PathLike = str | os.PathLike[str]
DIVERGING = "RdBu_r"  # negative blue, 0 white, positive red
PROBABILITY = "Blues"  # 0 white, 1 dark blue
MAX_ANNOTATED = 400  # cells: more than this and values are not written in by default
PATCHING_AXES = ("position", "head")


def plot_head_attribution(
    values: Any,
    path: PathLike,
    *,
    title: str = "attribution of each head",
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """A heatmap of ``values`` (L, H): row l, column h is head h of layer l (e.g. its direct
    logit attribution). The colour scale is symmetric, ±max |value|, white at 0; ``annotate``
    (default: at most 400 cells) writes each value in its cell."""
    v = _matrix("values", values, "(layers, heads)")
    n_layer, n_head = v.shape
    fig, ax = _figure(figsize or (0.55 * n_head + 2.6, 0.4 * n_layer + 1.6), dpi)
    image = _diverging(ax, v, annotate)
    ax.set_xticks(range(n_head), [str(h) for h in range(n_head)], fontsize=_font(n_head))
    ax.set_yticks(range(n_layer), [str(layer) for layer in range(n_layer)], fontsize=_font(n_layer))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    fig.colorbar(image, ax=ax, shrink=0.8)
    fit_width(fig, ax.set_title(title, fontsize=10), figsize)
    return save(fig, path, {"attribution": ax})


def plot_logit_lens(
    rows: Sequence[Sequence[tuple[str, float]]],
    path: PathLike,
    *,
    row_labels: Sequence[str] | None = None,
    title: str = "logit lens: the top tokens read from each layer's residual stream",
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """A table, one row per layer (``row_labels``, default "layer 0", "layer 1", ...) and one
    column per rank: each cell is a (token, probability) pair of ``rows``, coloured by the
    probability (0 white, 1 dark blue). Every row has the same number k >= 1 of pairs."""
    tokens, probs = _lens_rows(rows)
    n_rows, k = probs.shape
    labels = _labels("row_labels", row_labels, n_rows, [f"layer {i}" for i in range(n_rows)])
    fig, ax = _figure(figsize or (1.15 * k + 1.8, 0.42 * n_rows + 1.3), dpi)
    ax.imshow(probs.numpy(), cmap=PROBABILITY, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(n_rows):
        for j in range(k):
            p = float(probs[i, j])
            color = "white" if p > 0.55 else "black"
            text = f"{token_label(tokens[i][j], 8)}\n{p:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    ax.set_xticks(range(k), [f"#{j + 1}" for j in range(k)], fontsize=8)
    ax.set_yticks(range(n_rows), [token_label(s, 14) for s in labels], fontsize=_font(n_rows))
    ax.set_xlabel("rank")
    fit_width(fig, ax.set_title(title, fontsize=10), figsize)
    return save(fig, path, {"logit lens": ax})


def plot_singular_values(
    values: Any,
    path: PathLike,
    *,
    log: bool = True,
    title: str = "singular values of each head's matrix",
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The singular values σ_1 >= σ_2 >= ... of each head (e.g. of its OV matrix W_V W_O,
    rank <= d_head): ``values`` (L, H, r) draws one panel per layer with a line per head;
    a dict {label: (r,)} draws one panel with a line per label. ``log``: a log y axis (zeros,
    beyond the rank, are left out there)."""
    panels = _singular_panels(values)
    n = len(panels)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig = new_figure(figsize or (3.4 * cols + 0.6, 2.8 * rows + 0.9), dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = {}
    for index, (name, lines) in enumerate(panels.items()):
        ax = grid[index // cols][index % cols]
        for label, sigma in lines.items():
            shown = sigma.masked_fill(sigma <= 0, math.nan) if log else sigma
            ax.plot(range(1, len(sigma) + 1), shown.numpy(), marker=".", lw=1, label=label)
        if log:
            ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("i")
        ax.set_ylabel("σ_i")
        if len(lines) <= 16:
            ax.legend(fontsize=6, ncol=2)
        axes[name] = ax
    for index in range(n, rows * cols):  # the grid's unused cells
        grid[index // cols][index % cols].set_visible(False)
    fit_width(fig, fig.suptitle(title, fontsize=10), figsize)
    return save(fig, path, axes)


def plot_patching(
    values: Any,
    path: PathLike,
    *,
    over: str = "position",
    x_labels: Sequence[str] | None = None,
    title: str = "activation patching: the metric with each activation patched",
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """A heatmap of ``values``, (L, T) patched at each layer and position (``over=
    "position"``, ``x_labels`` the T tokens) or (L, H) at each head (``over="head"``). The
    colour scale is symmetric, ±max |value|, white at 0; ``annotate`` (default: at most 400
    cells) writes each value in its cell."""
    if over not in PATCHING_AXES:
        raise ValueError(f"over={over!r} is not allowed: one of {', '.join(PATCHING_AXES)}")
    v = _matrix("values", values, f"(layers, {over}s)")
    n_layer, n_col = v.shape
    default = [str(c) for c in range(n_col)]
    labels = _labels("x_labels", x_labels, n_col, default)
    width = 0.32 * n_col if over == "position" else 0.55 * n_col
    fig, ax = _figure(figsize or (min(40.0, max(4.0, width + 2.6)), 0.4 * n_layer + 1.9), dpi)
    image = _diverging(ax, v, annotate)
    label_ticks(ax, "x", labels, _font(n_col))
    ax.set_yticks(range(n_layer), [str(layer) for layer in range(n_layer)], fontsize=_font(n_layer))
    ax.set_xlabel(over)
    ax.set_ylabel("layer")
    fig.colorbar(image, ax=ax, shrink=0.8)
    fit_width(fig, ax.set_title(title, fontsize=10), figsize)
    return save(fig, path, {"patching": ax})


# Checking the inputs ---------------------------------------------------------------------------
def _as_tensor(name: str, values: Any) -> Tensor:
    try:
        t = torch.as_tensor(values)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{name} is not a tensor of numbers ({err}); allowed: a tensor") from None
    if t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} has dtype {t.dtype}: allowed real numbers")
    t = t.detach().to("cpu", torch.float64)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} holds NaN or infinity: allowed finite numbers")
    return t


def _matrix(name: str, values: Any, axes: str) -> Tensor:
    t = _as_tensor(name, values)
    if t.dim() != 2 or 0 in t.shape:
        raise ValueError(
            f"{name} has shape {tuple(t.shape)}: allowed a non-empty 2-D tensor {axes}"
        )
    return t


def _labels(name: str, labels: Sequence[str] | None, n: int, default: list[str]) -> list[str]:
    if labels is None:
        return default
    labels = list(labels) if not isinstance(labels, str) else [labels]
    if len(labels) != n or not all(isinstance(s, str) for s in labels):
        raise ValueError(f"{name} has {len(labels)} entries: allowed {n} strings, one a row/column")
    return labels


def _lens_rows(rows: Any) -> tuple[list[list[str]], Tensor]:
    """(tokens, probabilities (R, k)) from rows of (token, probability) pairs."""
    if isinstance(rows, str) or not isinstance(rows, Sequence) or not rows:
        raise ValueError("rows is empty or not a list: allowed a list of rows of (token, p)")
    tokens, probs = [], []
    for i, row in enumerate(rows):
        if isinstance(row, str) or not isinstance(row, Sequence) or not row:
            raise ValueError(f"rows[{i}] is {row!r}: allowed a non-empty list of (token, p)")
        if len(row) != len(rows[0]):
            raise ValueError(
                f"rows[{i}] has {len(row)} pairs and rows[0] {len(rows[0])}: allowed the "
                "same k in every row"
            )
        for j, pair in enumerate(row):
            ok = isinstance(pair, Sequence) and not isinstance(pair, str) and len(pair) == 2
            if not ok or not isinstance(pair[0], str) or isinstance(pair[1], bool):
                raise ValueError(f"rows[{i}][{j}] is {pair!r}: allowed a (token, p) pair")
            p = pair[1]
            if not isinstance(p, int | float) or not 0.0 <= float(p) <= 1.0:
                raise ValueError(f"rows[{i}][{j}] has p={p!r}: allowed a probability in [0, 1]")
        tokens.append([pair[0] for pair in row])
        probs.append([float(pair[1]) for pair in row])
    return tokens, torch.tensor(probs, dtype=torch.float64)


def _singular_panels(values: Any) -> dict[str, dict[str, Tensor]]:
    """{panel title: {line label: σ (r,)}} from (L, H, r) or {label: (r,)}."""
    if isinstance(values, Mapping):
        if not values:
            raise ValueError("values is an empty dict: allowed {label: (r,) singular values}")
        lines = {}
        for label, sigma in values.items():
            s = _as_tensor(f"values[{label!r}]", sigma)
            if s.dim() != 1 or not len(s):
                raise ValueError(
                    f"values[{label!r}] has shape {tuple(s.shape)}: allowed a non-empty (r,)"
                )
            lines[str(label)] = _non_negative(f"values[{label!r}]", s)
        return {"singular values": lines}
    t = _as_tensor("values", values)
    if t.dim() != 3 or 0 in t.shape:
        raise ValueError(
            f"values has shape {tuple(t.shape)}: allowed (layers, heads, r) or a dict "
            "{label: (r,)}"
        )
    t = _non_negative("values", t)
    return {
        f"layer {layer}": {f"L{layer}H{h}": t[layer, h] for h in range(t.shape[1])}
        for layer in range(t.shape[0])
    }


def _non_negative(name: str, t: Tensor) -> Tensor:
    if (t < 0).any():
        raise ValueError(f"{name} holds {float(t.min()):g}: singular values are >= 0")
    return t


# Drawing ---------------------------------------------------------------------------------------
def _figure(size: tuple[float, float], dpi: int):
    fig = new_figure(size, dpi)
    fig.set_layout_engine("constrained")
    return fig, fig.subplots()


def _diverging(ax, v: Tensor, annotate: bool | None):
    """imshow of v on a symmetric scale ±max |v| (white at 0), values written in the cells."""
    lim = float(v.abs().max()) or 1.0
    image = ax.imshow(
        v.numpy(), cmap=DIVERGING, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest"
    )
    if annotate if annotate is not None else v.numel() <= MAX_ANNOTATED:
        size = max(4.0, min(8.0, 160.0 / max(v.shape)))
        for i, row in enumerate(v.tolist()):
            for j, value in enumerate(row):
                color = "white" if abs(value) > 0.6 * lim else "black"
                ax.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=size, color=color)
    return image


def _font(n: int) -> float:
    return max(4.0, min(9.0, 220.0 / max(n, 1)))
