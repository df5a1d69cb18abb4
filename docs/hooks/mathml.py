"""MkDocs hook: the formulas of the pages as MathML, made when the site is built.

pymdownx.arithmatex (generic mode) wraps each formula, ``\\( ... \\)`` inline and ``$$ ... $$``
as a block, in a span or div of class ``arithmatex``; this hook converts the TeX inside to
MathML with latex2mathml, which browsers render natively. The site then needs no script and
no network to show the formulas. The hook also adds the formulas' style sheet,
docs/assets/math/math.css (the bundled math font, the spacing of display formulas), to the
site's ``extra_css``.

latex2mathml passes what it does not know through as text, or drops it; the hook refuses
instead, failing the build with a message naming the page and the formula: a formula it cannot
read, an environment other than latex2mathml's (``cases``, ``matrix``, ``array``, ...), a row
break with spacing (``\\\\[1ex]``, which would print as text: write ``\\\\``), a command left in
the MathML as text (``\\softmax``), or an alignment ``&`` outside an environment.
"""

from __future__ import annotations

import html
import re

from latex2mathml.commands import MATRICES
from latex2mathml.converter import convert

STYLE = "assets/math/math.css"  # relative to docs/
WRAPPED = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*'
    r"(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])\s*</(?P=tag)>",
    re.S,
)
TEXT = re.compile(r"(<mtext[^>]*>)(.*?)(</mtext>)", re.S)  # latex2mathml leaves text unescaped
ENVIRONMENTS = frozenset(name.lstrip("\\") for name in MATRICES)  # what latex2mathml converts
BEGIN = re.compile(r"\\begin\s*\{([^}]*)\}")
ROW_SPACING = re.compile(r"\\\\\s*\[[^\]]*\]")  # \\[1ex]: latex2mathml prints the [1ex]
# Spacing as TeX sets it. \operatorname{lr} and \infty come out as operators (<mo>lr</mo>,
# <mo>∞</mo>), which browsers space like relations ("lr (s)", "− ∞"): they are identifiers.
# A minus or plus first in a row, or right after an operator other than a closing bracket, is
# a sign ("= −∞", "e^{−x}"): MathML spaces it as one with form="prefix".
OPERATOR_NAME = re.compile(r"<mo>([A-Za-z]{2,}|&#x0221E;)</mo>")
SIGN = re.compile(r"(<mtd[^>]*>|<mrow>|<mo[^>]*>([^<]*)</mo>)<mo>(&#x02212;|&#x0002B;)</mo>")
CLOSING = {"&#x00029;", "&#x0005D;", "&#x0007D;", "&#x0007C;", "&#x02016;", ")", "]", "}", "|"}
LEFT_OVER = re.compile(r">[^<]*?(\\[A-Za-z]+|\\.|&(?![#\w]+;))[^<]*<")  # in an element's text


def _refuse(tex: str) -> str | None:
    """What in ``tex`` latex2mathml would not convert (before converting), or None."""
    for name in BEGIN.findall(tex):
        if name not in ENVIRONMENTS:
            allowed = ", ".join(sorted(ENVIRONMENTS))
            return f"uses the environment {name!r}, not converted (allowed: {allowed})"
    if spacing := ROW_SPACING.search(tex):
        return f"uses the row spacing {spacing[0]!r}, not converted: write \\\\ alone"
    return None


def _sign(match: re.Match) -> str:
    before, closer, sign = match[1], match[2], match[3]
    if closer is not None and closer in CLOSING:
        return match[0]  # "(a) − b": a binary minus
    return f'{before}<mo form="prefix">{sign}</mo>'


def _mathml(match: re.Match, page: str) -> str:
    block = match.group("block") is not None
    tex = html.unescape(match.group("block") if block else match.group("inline")).strip()
    if why := _refuse(tex):
        raise ValueError(f"{page}: the formula {tex!r} {why}")
    try:
        mathml = convert(tex, display="block" if block else "inline")
    except Exception as err:  # latex2mathml raises its own exception types
        raise ValueError(f"{page}: the formula {tex!r} cannot be read: {err}") from err
    if left := LEFT_OVER.search(mathml):
        raise ValueError(f"{page}: the formula {tex!r} uses {left[1]}, not converted")
    mathml = OPERATOR_NAME.sub(r"<mi>\1</mi>", mathml)
    mathml = SIGN.sub(_sign, mathml)
    return TEXT.sub(lambda t: t[1] + t[2].replace("<", "&lt;").replace(">", "&gt;") + t[3], mathml)


def on_config(config, **kwargs):
    if STYLE not in config.extra_css:
        config.extra_css.append(STYLE)
    return config


def on_page_content(html_text: str, page, **kwargs) -> str:
    return WRAPPED.sub(lambda m: _mathml(m, page.file.src_path), html_text)
