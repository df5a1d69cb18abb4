"""MkDocs hook: the live views of the pages, drawn by the explorer's own JavaScript
(glassformer.explore.views) from a small model made here, when the site is built.

A page asks for a view with a line ``<!-- view: NAME -->`` (an HTML comment: without this hook
the page shows nothing there); the hook puts the view's HTML in its place: a frame holding the
explorer's page in view mode with its data embedded, which asks nothing of the network and
works from ``file://``.

    attention   the Attention page: the period-2 decoder of its picture (docs/scripts/
                pictures.py: 2 layers, 4 heads, trained 80 AdamW steps on one thread) on the
                same right-padded input; every layer and head, the masks hatched
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- view: ([\w-]+) -->")


def pictures():
    """docs/scripts/pictures.py, which trains the pictures' models."""
    spec = importlib.util.spec_from_file_location("pictures", ROOT / "docs/scripts/pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def attention_pass():
    """(tokens, cache): the Attention page's picture's model and input, run with every hook
    point cached (the pattern A and the mask of each layer among them)."""
    import torch

    script = pictures()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the pictures' float rounding, hence their numbers
    try:
        model = script.period_decoder()
        ids = torch.cat([script.period_ids([0], 8), torch.zeros(1, 2, dtype=torch.long)], 1)
        with torch.no_grad():
            _, cache = model.run_with_cache(ids, attention_mask=(ids != 0).long())
    finally:
        torch.set_num_threads(threads)
    return script.labels(ids[0]), cache


def attention():
    tokens, cache = attention_pass()
    return cache.show("pattern", layer=0, head=0, tokens=tokens)


VIEWS = {"attention": attention}


def on_page_content(html: str, page, **kwargs) -> str:
    def view(m: re.Match) -> str:
        if m[1] not in VIEWS:
            raise ValueError(f"{page.file.src_uri}: no view {m[1]!r}; the views: {list(VIEWS)}")
        return VIEWS[m[1]]()._repr_html_()

    return MARKER.sub(view, html)
