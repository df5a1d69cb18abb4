"""MkDocs hook: every Concepts page with code and every tutorial is also a notebook in the site.

After the build, docs/scripts/notebooks.py writes the notebooks into the site
(``site/notebooks/concepts/attention.ipynb``, ``site/notebooks/tutorials/char-gpt.ipynb``, the
SVG pictures they show under ``site/notebooks/images/``), and each of those pages gets, under
its title, a download link to its notebook and a line saying how to open it. The link is a
relative one, so it works when the site is opened from disk (``file://``); it is raw HTML,
since the notebook is not a page of the docs that MkDocs could check a Markdown link against.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "notebooks"  # in the site
TITLE = re.compile(r"^# .*\n", re.M)


def _generator():
    """docs/scripts/notebooks.py as a module (the scripts are not a package)."""
    name = "docs_notebooks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs/scripts/notebooks.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


NOTEBOOKS = _generator()
_places: dict[str, str] = {}  # a page's path under docs/ -> its notebook's under notebooks/


def link(place: str, page_url: str) -> str:
    """The lines put under a page's title: its notebook ``place`` linked from ``page_url``."""
    href = get_relative_url(f"{FOLDER}/{place}", page_url)
    name = place.rsplit("/", 1)[-1]
    return (
        f'<p class="notebook-link"><a href="{href}" download="{name}">Open as a notebook</a> '
        f"(<code>{name}</code>: this page's text and code as cells, with the outputs shown "
        "here).<br>To run it: in the checkout, <code>make lab</code> writes every page's "
        "notebook into <code>notebooks/</code> and opens JupyterLab there.</p>"
    )


def on_pre_build(config, **kwargs) -> None:
    _places.clear()
    for page in NOTEBOOKS.pages():
        _places[f"{page.parent.name}/{page.name}"] = NOTEBOOKS.place(page)


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    place = _places.get(page.file.src_uri)
    title = TITLE.search(markdown)
    if place is None or title is None:
        return markdown
    insert = "\n" + link(place, page.url) + "\n\n"
    return markdown[: title.end()] + insert + markdown[title.end() :]


def on_post_build(config, **kwargs) -> None:
    try:
        NOTEBOOKS.write(Path(config.site_dir) / FOLDER)
    except ValueError as error:
        raise PluginError(f"notebooks: {error}") from error
