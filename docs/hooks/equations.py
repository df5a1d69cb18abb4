"""MkDocs hook: on the Python API pages, each "Eq. (n)" links to the concept page that shows it.

The docstrings number their equations as "What Happens in A Transformer Layer" does: Eqs. (1)
to (3), scaled dot-product attention, are shown on concepts/attention.md; Eqs. (4) and (5), the
projections of self- and cross-attention, on concepts/multi-head.md. The hook rewrites the text
of the rendered page only: code (the source listings, inline code) and existing links are left
as they are.
"""

from __future__ import annotations

import re

from mkdocs.utils import get_relative_url

PAGES = {1: "attention", 2: "attention", 3: "attention", 4: "multi-head", 5: "multi-head"}
EQUATION = re.compile(r"\bEqs?\.\s*(?:\(([1-5])\)|([1-5])\b)")  # Eq. (1), Eq. 1
# what is not plain text: a code listing, inline code, a link, a math element, or a tag
NOT_TEXT = re.compile(r"<(pre|code|a|math|h[1-6])\b.*?</\1>|<[^>]+>", re.S)


def link_equations(html: str, page_url: str) -> str:
    """``html`` with each "Eq. (n)" of its plain text linked to the page of equation n."""

    def in_text(text: str) -> str:
        def one(m: re.Match) -> str:
            target = f"concepts/{PAGES[int(m[1] or m[2])]}.html#the-formulas"
            return f'<a href="{get_relative_url(target, page_url)}">{m[0]}</a>'

        return EQUATION.sub(one, text)

    out, last = [], 0
    for m in NOT_TEXT.finditer(html):
        out += [in_text(html[last : m.start()]), m[0]]
        last = m.end()
    return "".join(out) + in_text(html[last:])


def on_page_content(html: str, page, **kwargs) -> str:
    if not page.file.src_uri.startswith("reference/api/"):
        return html
    return link_equations(html, page.url)
