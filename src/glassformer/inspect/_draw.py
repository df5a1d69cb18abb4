"""matplotlib plumbing for the pictures: import on demand, figures without pyplot's global
state, token tick labels, pixel boxes of the matrices, and writing PNGs atomically."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..safe_write import replace_file

__all__ = ["Picture", "fit_width", "label_ticks", "new_figure", "require_matplotlib", "save"]
__all__ += ["token_label"]

INSTALL_HINT = "pip install 'glassformer[plot]'"
MAX_TICKS = 48  # more positions than this: label every k-th one only


@dataclass(frozen=True)
class Picture:
    """A PNG written by one of the plot functions.

    ``width`` and ``height`` are its size in pixels (figsize × dpi); ``panels`` maps each
    matrix drawn to its pixel box (left, top, right, bottom), top-left origin, right and
    bottom exclusive, so that cell (n, m) of a T × S matrix is centred at
    (left + (m + ½)(right - left)/S, top + (n + ½)(bottom - top)/T)."""

    path: Path
    width: int
    height: int
    panels: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)


def require_matplotlib() -> None:
    """Raise ImportError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(f"the pictures need matplotlib: {INSTALL_HINT}") from None


def new_figure(figsize: tuple[float, float], dpi: int) -> Any:
    """A matplotlib Figure with an Agg canvas (no pyplot, no display needed)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if dpi < 10 or min(figsize) <= 0:
        raise ValueError(f"figsize={figsize} and dpi={dpi} are not allowed: positive, dpi >= 10")
    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def fit_width(fig: Any, title: Any, figsize: Any = None, margin: float = 0.15) -> None:
    """Widen ``fig`` when its ``title`` (a Text: the suptitle, an axes title) would not fit,
    with ``margin`` inches either side, so that no title is cut at the figure's edges; a
    ``figsize`` the caller chose is kept as it is."""
    if figsize is not None:
        return
    width = title.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    if width + 2 * margin > fig.get_figwidth():
        fig.set_figwidth(width + 2 * margin)


def token_label(token: str, width: int = 10) -> str:
    """A token as a tick label: whitespace made visible, long tokens shortened."""
    shown = token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def label_ticks(ax: Any, axis: str, labels: Sequence[str], fontsize: float) -> None:
    """Put the token labels on the x or y axis of a matrix (every k-th one when many)."""
    step = max(1, -(-len(labels) // MAX_TICKS))
    ticks = list(range(0, len(labels), step))
    texts = [token_label(labels[i]) for i in ticks]
    if axis == "x":
        turn = 90 if any(len(t) > 2 for t in texts) else 0
        ax.set_xticks(ticks, texts, rotation=turn, fontsize=fontsize)
    else:
        ax.set_yticks(ticks, texts, fontsize=fontsize)


def save(fig: Any, path: str | os.PathLike[str], axes: dict[str, Any]) -> Picture:
    """Write ``fig`` as a PNG at ``path`` (through a temporary file and a rename) and return
    the Picture with the pixel box of each axes in ``axes``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # draws, so the layout below is the one saved
    replace_file(path, lambda tmp: fig.savefig(tmp, format="png"))
    width, height = fig.canvas.get_width_height()  # whole pixels, as the PNG: truncated
    panels = {}
    for name, ax in axes.items():
        box = ax.get_window_extent()  # display pixels, bottom-left origin
        left, right = round(box.x0), round(box.x1)
        top, bottom = height - round(box.y1), height - round(box.y0)
        panels[name] = (left, top, right, bottom)
    return Picture(path, width, height, panels)
