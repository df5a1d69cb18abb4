"""The explorer's HTML: static/explorer.html with static/explorer.css and the scripts (draw.js,
attention.js, readouts.js, grids.js, explorer.js, in one function scope) inlined, so that one
file holds the whole page (nothing is fetched from a CDN, ever).

    page_html(info)                   the served page: it asks the server's /api/run
    page_html(info, data=explore_data(...))   an exported page: the data embedded, no server
    page_html(info, data, view)       a view (views.py): only the panels ``view`` names

``info`` is model_info(model) plus what the page should start with (``text``, ``target``).
"""

from __future__ import annotations

import json
import re
from importlib import resources

__all__ = ["page_html"]

# helpers first, init last
SCRIPTS = ("draw.js", "attention.js", "readouts.js", "grids.js", "explorer.js")
MARKER = re.compile(r"/\*\{\{(STYLE|BOOT|SCRIPT)\}\}\*/")


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _script_json(value) -> str:
    """JSON that is safe inside <script>: no '<' can close the element early, and in ASCII,
    so that a lone surrogate (a folder name that is not UTF-8) cannot fail the page's encoding."""
    return json.dumps(value, allow_nan=False).replace("<", "\\u003c")


def page_html(info: dict, data: dict | None = None, view: dict | None = None) -> str:
    """The page for a model (``info``); with ``data`` a self-contained export of one input;
    with ``view`` ({"id", "panels", "layer", "head"}) only those panels of ``data``."""
    html, css = _static("explorer.html"), _static("explorer.css")
    js = "\n".join(_static(name) for name in SCRIPTS)
    boot = {"mode": "served" if data is None else "exported", "info": info, "data": data}
    if view is not None:
        boot["view"] = view
    parts = {"STYLE": css, "BOOT": _script_json(boot), "SCRIPT": js}
    return MARKER.sub(lambda m: parts[m.group(1)], html)  # one pass: no part is read twice
