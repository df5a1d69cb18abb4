"""The explorer: one local web page to look inside a model ("Brief Notes on Transformers" and
"Formal Algorithms for Transformers", all of it on one input): tokens, attention per layer and
head with its mask, the attention graph, the residual stream, the logit lens, each head's
attribution and the predictions; and the same views inline in a notebook.

    glassformer explore --checkpoint DIR                 serve the page on http://127.0.0.1:8000
    glassformer explore --checkpoint DIR --text T --export page.html    one self-contained file
    show(model, text)          in a notebook: the explorer's view of one input, inline
    cache.show("pattern", layer=1)    a cached pass's attention (residual, lens), inline

Modules: data (what the page shows, computed from the model's hook points), page (the HTML,
with the page's own JavaScript and CSS inlined from static/), views (the views for a notebook
or a page, view_data their data from a cache, a trace or a grid), server (the local server:
Starlette on uvicorn, the optional extra ``glassformer[explore]``).
"""

from .data import explore_data, model_info
from .page import page_html
from .views import View, show, show_cache, show_grid, show_trace

__all__ = [
    "View",
    "explore_data",
    "model_info",
    "page_html",
    "show",
    "show_cache",
    "show_grid",
    "show_trace",
]
