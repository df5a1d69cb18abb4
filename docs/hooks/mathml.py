"""MkDocs hook: the formulas of the pages as MathML, made when the site is built.

pymdownx.arithmatex (generic mode) wraps each formula, ``\\( ... \\)`` inline and ``$$ ... $$``
as a block, in a span or div of class ``arithmatex``; this hook converts the TeX inside to
MathML with latex2mathml, which browsers render natively. The site then needs no script and
no network to show the formulas. A formula latex2mathml cannot read, or with a command it
does not know, fails the build, naming the page.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert

WRAPPED = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*'
    r"(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])\s*</(?P=tag)>",
    re.S,
)
TEXT = re.compile(r"(<mtext[^>]*>)(.*?)(</mtext>)", re.S)  # latex2mathml leaves text unescaped
UNKNOWN = re.compile(r"<m[io][^>]*>(\\[A-Za-z]+)")  # a command latex2mathml passed through as is


def _mathml(match: re.Match, page: str) -> str:
    block = match.group("block") is not None
    tex = html.unescape(match.group("block") if block else match.group("inline"))
    try:
        mathml = convert(tex.strip(), display="block" if block else "inline")
    except Exception as err:  # latex2mathml raises its own exception types
        raise ValueError(f"{page}: the formula {tex.strip()!r} cannot be read: {err}") from err
    if unknown := UNKNOWN.search(mathml):
        raise ValueError(f"{page}: the formula {tex.strip()!r} uses {unknown[1]}, not known")
    return TEXT.sub(lambda t: t[1] + t[2].replace("<", "&lt;").replace(">", "&gt;") + t[3], mathml)


def on_page_content(html_text: str, page, **kwargs) -> str:
    return WRAPPED.sub(lambda m: _mathml(m, page.file.src_path), html_text)
