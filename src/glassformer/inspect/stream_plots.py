"""Pictures (PNG) of the residual stream: what enters it at each position, and how it grows.

    plot_residual    ‖x‖ of every token through one stack: x^(0), after each sub-layer and
                     after the final norm; below it ‖update‖, the size of each sub-layer's
                     output added to the stream (x ← x + F(Norm(x)) pre-norm,
                     x ← Norm(x + F(x)) post-norm)
    plot_positional  the positional-encoding matrix R (row n is r_n, x̃_n = x_n + r_n) beside
                     R Rᵀ (r_n · r_m); for rotary positions the cos(n·θ_j), sin(n·θ_j) tables

``tokens`` labels the positions as in plots.py (a space shows as "␣"). matplotlib is an
optional dependency (``pip install 'glassformer[plot]'``); each function returns a ``Picture``.
"""

from __future__ import annotations

import os

import torch
from torch import nn

from ._draw import Picture, new_figure, save, token_label
from .capture import Recording
from .selection import Tokens, check_index, labels_for

__all__ = ["plot_positional", "plot_residual"]

PathLike = str | os.PathLike[str]
_SHORT = {"self_attn": "attn", "cross_attn": "cross", "ff": "ff"}  # sub-layer -> axis label


def plot_residual(
    rec: Recording,
    path: PathLike,
    *,
    stack: str | None = None,
    call: int = 0,
    example: int = 0,
    tokens: Tokens = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The residual stream through one stack: ‖x‖ of every token at x^(0), after each
    sub-layer and after the final norm (top), and ‖update‖ of each sub-layer (bottom)."""
    name = rec.resolve_stack(stack)
    steps, out = rec.stream(name, call), rec.output(name, call)
    states = rec.states(name, call)  # (N + 1, B, T, C)
    example = check_index("example", example, states.shape[1])
    norms = states[:, example].float().norm(dim=-1).cpu().numpy()  # (N + 1, T)
    labels = ["x⁽⁰⁾"] + [f"{r.layer}.{_SHORT[r.sublayer]}" for r in steps]
    names = labels_for(tokens, name, norms.shape[1])
    n = len(labels) + out.final_norm
    fig = new_figure(figsize or (max(6.0, 0.45 * n + 2.5), 6.0), dpi)
    fig.set_layout_engine("constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    xs = range(len(labels))
    for t in range(norms.shape[1]):
        label = token_label(names[t]) if t < 12 else None  # "␣" for a space, as the axes
        top.plot(xs, norms[:, t], lw=0.8, alpha=0.5, label=label)
    top.plot(xs, norms.mean(1), "k-o", lw=2, ms=3, label="mean")
    top.set_ylabel("‖x‖ of each token")
    top.legend(fontsize=6, ncol=2, loc="upper left")
    if out.final_norm:  # on its own scale: a norm resets the size of the vectors
        final = out.output[example].float().norm(dim=-1).cpu().numpy()  # (T,)
        right = top.twinx()
        right.plot([len(labels)] * len(final), final, "s", color="#f28e2b", ms=4, alpha=0.7)
        right.set_ylabel("‖Norm(x)‖ after the final norm", color="#f28e2b")
        labels.append("final norm")
    placement = "pre-norm" if steps and steps[0].norm_first else "post-norm"
    top.set_title(f"{name} residual stream ({placement})", fontsize=10)
    if steps:
        updates = torch.stack([r.update_norm[example].float().cpu() for r in steps]).numpy()
        bottom.bar(range(1, len(steps) + 1), updates.mean(1), color="#3b7dc4")
        bottom.plot(range(1, len(steps) + 1), updates, "k.", ms=2, alpha=0.5)
    bottom.set_ylabel("‖update‖ (sub-layer output)")
    bottom.set_xticks(list(range(len(labels))), labels, rotation=60, fontsize=7)
    return save(fig, path, {"stream": top, "updates": bottom})


def plot_positional(
    model: nn.Module,
    path: PathLike,
    *,
    n_positions: int | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 100,
) -> Picture:
    """The positional-encoding matrix R (positions × features) of the model's first input
    embedding, x̃_n = x_n + r_n, beside R Rᵀ (r_n · r_m: how alike two positions look);
    for rotary positions the cos(n·θ_j) and sin(n·θ_j) tables instead."""
    from .positions import positional_matrix

    title, matrices = positional_matrix(model, n_positions)
    fig = new_figure(figsize or (11.0, 5.0), dpi)
    fig.set_layout_engine("constrained")
    grid = fig.subplots(1, len(matrices), squeeze=False)[0]
    axes = {}
    for ax, (label, (m, xlabel)) in zip(grid, matrices.items(), strict=True):
        lim = float(m.abs().max()) or 1.0
        image = ax.imshow(m.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("position n")
        ax.set_xlabel(xlabel)
        fig.colorbar(image, ax=ax, shrink=0.8)
        axes[label] = ax
    fig.suptitle(title, fontsize=10)
    return save(fig, path, axes)
