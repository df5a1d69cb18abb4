"""The explorer's views inline in a notebook or a page: one self-contained HTML fragment per
view, drawn by the explorer's own JavaScript (page.py) in its view mode, with no server and
nothing fetched.

    show(model, "ROMEO: and")                 the explorer's whole view of one input
    show(model, text, panels=["attention"])   some of its panels only
    cache.show("pattern", layer=1)            A of layer 1 of a cached pass, a head control
    cache.show("residual"), cache.show("lens")    ‖update‖ per sub-layer; the logit lens
    show_trace(trace(model, ids))             each step of a trace: formula, tensors on hover
    show_grid(patch_residual(...), columns=tokens)    a patching grid (layer × position)

Each returns a ``View``: Jupyter draws it through ``_repr_html_``, an ``<iframe srcdoc>``
holding the explorer's page (its data embedded), so that several views of one notebook keep
apart, and none touches the notebook's own styles; the page tells the frame its height.
``view.html()`` is the page itself and ``view.save(path)`` writes it, to open from disk.
``cache.show`` (glassformer.models.hooked.ActivationCache) is drawn here: the package's
``__init__`` registers ``show_cache`` as its drawer (glassformer/drawing.py).
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Sequence
from pathlib import Path

from torch import Tensor

from ..inspect.steps import Step
from ..models.hooked import ActivationCache
from .data import explore_data
from .page import page_html
from .view_data import cache_data, grid_data, trace_data

__all__ = ["PANELS", "View", "show", "show_cache", "show_grid", "show_trace"]

PANELS = ("tokens", "attention", "graph", "residual", "lens", "attribution", "predictions")
CACHE_PANELS = {"pattern": ["attention"], "residual": ["residual"], "lens": ["tokens", "lens"]}
FRAME = (
    '<div class="glassformer-view">'
    '<iframe id="{id}" title="{title}" sandbox="allow-scripts" srcdoc="{srcdoc}" '
    'style="width: 100%; height: {height}px; border: 0; display: block;"></iframe>'
    "<script>(function () {{"
    'var frame = document.getElementById("{id}");'
    'window.addEventListener("message", function (e) {{'
    'if (e.source === frame.contentWindow && e.data && e.data.glassformerView === "{id}") {{'
    'frame.style.height = e.data.height + "px"; }} }});'
    'if (frame.contentWindow) frame.contentWindow.postMessage("glassformer-view-height", "*");'
    "}})();</script></div>"
)  # the script sizes the frame to its page; without it (an untrusted notebook) it keeps height


class View:
    """One view: the explorer's page showing ``panels`` of ``data`` (what data.py and
    view_data.py compute), starting at ``layer`` and ``head``. ``title`` names it for
    screen readers and the page's title."""

    def __init__(
        self,
        data: dict,
        panels: Sequence[str],
        *,
        title: str = "glassformer view",
        layer: int = 0,
        head: int = 0,
    ) -> None:
        unknown = [p for p in panels if p not in (*PANELS, "grid", "trace")]
        if not panels or unknown:
            raise ValueError(f"panels={panels!r}: choose from {PANELS}")
        if "attention" in data:  # the layer and head it opens on
            weights = data["attention"][0]["weights"]  # (L, H, T, S)
            for name, value, n in (("layer", layer, len(weights)), ("head", head, len(weights[0]))):
                if isinstance(value, bool) or value not in range(n):
                    raise ValueError(f"{name}={value!r}: the {name}s shown are 0..{n - 1}")
        self.data, self.title = data, title
        self.id = f"glassformer-view-{uuid.uuid4().hex[:12]}"
        self.view = {"id": self.id, "panels": list(panels), "layer": layer, "head": head}

    def html(self) -> str:
        """The whole page: the explorer in view mode with the data embedded."""
        return page_html({**self.data.get("model", {}), "name": self.title}, self.data, self.view)

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (a missing folder is made), to open from disk."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        """The fragment a notebook shows: the page in a sandboxed frame sized to it."""
        return FRAME.format(
            id=self.id,
            title=html.escape(self.title),
            srcdoc=html.escape(self.html(), quote=True),
            height=self._height(),
        )

    def _height(self) -> int:
        """A first height in pixels, before the page reports its own."""
        return 180 + 260 * len(self.view["panels"])

    def __repr__(self) -> str:
        return f"View({', '.join(self.view['panels'])}: {self.title})"


def show(
    model,
    text: str,
    target: str | None = None,
    *,
    panels: Sequence[str] = PANELS,
    layer: int = 0,
    head: int = 0,
    top_k: int = 5,
) -> View:
    """The explorer's view of ``model`` on ``text`` (``target``: an encoder-decoder's decoder
    input, default its greedy output), the ``panels`` named (default all of them): "tokens",
    "attention", "graph", "residual", "lens", "attribution", "predictions"."""
    data = explore_data(model, text, target, top_k=top_k)
    return View(data, panels, title=f"{type(model).__name__} on {text!r}", layer=layer, head=head)


def show_cache(
    cache: ActivationCache,
    what: str = "pattern",
    layer: int = 0,
    *,
    head: int = 0,
    batch: int = 0,
    tokens: Sequence[str] | dict[str, Sequence[str]] | None = None,
    k: int = 5,
) -> View:
    """A view of one cached pass (``model.run_with_cache``; ``cache.show(...)`` calls this):

    ``"pattern"``: the attention weights A (Eq. 1) of every layer and head, ``layer`` and
    ``head`` shown first, controls for both (and for self- or cross-attention), hover for
    A_nm with its query and key tokens; masked cells hatched when the pass cached the mask.
    ``"residual"``: ‖update‖ of each sub-layer at each position, ‖x‖ after it on hover.
    ``"lens"``: the ``k`` tokens the stream points to after each block (click a token).

    ``batch``: the example shown; ``tokens``: labels of the positions (a list, or {stack:
    list} for an encoder-decoder), by default the ids the pass was given, as the model's
    tokenizer names them."""
    data = cache_data(cache, what, batch=batch, tokens=tokens, k=k)
    title = f"{what} of {type(cache.model).__name__}"
    return View(data, CACHE_PANELS[what], title=title, layer=layer, head=head)


def show_trace(steps: list[Step], tokens: Sequence[str] | None = None) -> View:
    """A view of a trace (glassformer.inspect.trace): choose a step to read its formula and
    see its tensors at example 0 as heatmaps, each value on hover with its index;
    ``tokens``: the input's tokens, listed with their positions."""
    return View(trace_data(steps, tokens), ["trace"], title="trace")


def show_grid(
    values: Tensor | Sequence,
    *,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    pages: Sequence[str] | None = None,
    axes: Sequence[str] | None = None,
    label: str = "metric",
    title: str = "",
) -> View:
    """A grid of numbers as a heatmap with labelled axes and its value on hover: a patching
    result of glassformer.circuits, (L, T) of ``patch_residual``, (L, H) of ``patch_heads``,
    (hooks, L, T) of ``patch_blocks`` (a control chooses the first axis).

    rows, columns, pages: the labels of each axis (default "layer 0", ...: the axis name and
    the index); ``axes``: the names of the axes, ("layer", "position") unless told (with a
    first one for a 3-D grid); ``label``: what the values are."""
    data = grid_data(
        values, rows=rows, columns=columns, pages=pages, axes=axes, label=label, title=title
    )
    return View(data, ["grid"], title=title or "grid")

