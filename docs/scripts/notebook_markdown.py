"""A page's prose as the Markdown of a notebook cell (docs/scripts/notebooks.py makes the cells).

What the site's Markdown extensions do, done here for JupyterLab's Markdown:

* math: ``\\( \\)`` and ``\\[ \\]`` (pymdownx.arithmatex) become ``$ $`` and ``$$ $$``:
  JupyterLab's Markdown reads ``\\(`` as an escaped parenthesis before MathJax sees it, and
  protects only dollar-delimited math (``$$ $$`` blocks pass unchanged); code spans are left
  alone;
* links to the site's pages (``../glossary.md#head``) go to the built page's HTML file
  (``../../glossary.html#head``) as seen from the notebook's place in the site
  (``notebooks/<section>/``); a link to an API object (``[Run][glassformer.Run]``,
  mkdocstrings) goes to its anchor on the API page that documents it;
* a PNG, JPEG or GIF the page shows becomes an attachment of the cell (the notebook carries
  it, wherever it is opened); an SVG, which JupyterLab shows only from a file, is linked
  under ``../images/`` and written beside the notebooks by the caller (``Prose.files``);
* a snippet include (``--8<-- "docs/..."``, pymdownx.snippets) becomes the included text
  (the benchmark tables, made when the site is built, say how to make them where they are
  missing);
* an admonition (``!!! note "Title"`` and its indented lines) becomes a quote.
"""

from __future__ import annotations

import base64
import functools
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SITE = "../../"  # from notebooks/<section>/ in the site to the site's root
CODE_SPAN = re.compile(r"(`+)[^`].*?\1|```.*?```", re.S)  # left as they are
MATH = {"\\(": "$", "\\)": "$", "\\[": "$$", "\\]": "$$"}
# [text](target "title"), ![alt](target): the text may hold code and one level of brackets
LINK = re.compile(r'(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)(?:\s+"[^"]*")?\)')
LINK_TARGET = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+)")  # what a link reaches
AUTOREF = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[(glassformer(?:\.\w+)*)\]")
# made from the committed results when the site is built (and by make lab): docs/scripts/
# benchmark_pages.py; where they are not made yet, the cell says so
GENERATED = "docs/benchmarks/generated/"
NOT_MADE = "python docs/scripts/benchmark_pages.py makes it from the committed results"
SNIPPET = re.compile(r'^( *)--8<-- "([^"]+)"\s*$', re.M)
ADMONITION = re.compile(r'^!!! ([\w-]+)(?: +"([^"]*)")? *$')
IMAGE_TYPES = {  # attached to the cell; an SVG is a file beside the notebooks
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
}


@dataclass
class Prose:
    """Converts the prose of one page (``page``: its path under docs/, e.g.
    ``concepts/attention.md``)."""

    page: str
    site: str = SITE  # the built site's root, from the notebook's folder
    files: dict[str, Path] = field(default_factory=dict)  # beside the notebooks: path -> file

    def cell(self, text: str) -> tuple[str, dict]:
        """The Markdown of a cell and its attachments ({name: {mime type: base64}})."""
        attachments: dict[str, dict[str, str]] = {}

        def link(m: re.Match) -> str:
            image, words, target = m[1], m[2], m[3]
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                return m[0]  # https:, mailto:, data:, or an absolute path: as written
            if image:
                shown = self.image(target, attachments)
                return f"![{words}]({shown})" if shown else f"*({words}: {NOT_MADE})*"
            return f"[{words}]({self.url(target)})"

        def autoref(m: re.Match) -> str:
            return f"[{m[1]}]({self.site}{api_page(m[2])}#{m[2]})"

        text = AUTOREF.sub(autoref, LINK.sub(link, text))
        return math(text), attachments

    def url(self, target: str) -> str:
        """A relative link of the page as a link from the notebook into the built site."""
        path, hash_, anchor = target.partition("#")
        where = self.page if not path else resolve(self.page, path)
        if where.endswith(".md"):
            where = where[:-3] + ".html"  # use_directory_urls: false
        return f"{self.site}{where}{hash_}{anchor}"

    def image(self, target: str, attachments: dict) -> str | None:
        path = resolve(self.page, target)
        file = DOCS / path
        if not file.is_file() and f"docs/{path}".startswith(GENERATED):
            return None  # a benchmark chart not made in this checkout: the text says so
        if not file.is_file():
            raise ValueError(f"docs/{self.page}: the picture {target} ({file}) is missing")
        mime = IMAGE_TYPES.get(file.suffix.lower())
        if mime is None:  # an SVG: a file beside the notebooks
            name = "images/" + path.removeprefix("images/")
            self.files[name] = file
            return f"../{name}"
        attachments[file.name] = {mime: base64.b64encode(file.read_bytes()).decode("ascii")}
        return f"attachment:{file.name}"


def resolve(page: str, target: str) -> str:
    """``target``, relative to ``page`` (both under docs/), as a path under docs/."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), target))


def math(text: str) -> str:
    """``text`` with arithmatex's delimiters as dollars, outside code spans and blocks."""
    out, last = [], 0
    for m in CODE_SPAN.finditer(text):
        out += [_dollars(text[last : m.start()]), m[0]]
        last = m.end()
    return "".join(out) + _dollars(text[last:])


def _dollars(text: str) -> str:
    return re.sub(r"\\[()\[\]]", lambda m: MATH[m[0]], text)


def api_page(identifier: str) -> str:
    """The API page (under docs/) that documents ``identifier``: the page whose ``::: name``
    directive is the identifier or its longest dotted prefix."""
    best, page = "", None
    for name, stem in _directives():
        if (identifier == name or identifier.startswith(name + ".")) and len(name) > len(best):
            best, page = name, stem
    if page is None:
        raise ValueError(f"{identifier}: no page of docs/reference/api/ documents it")
    return f"reference/api/{page}.html"


@functools.cache
def _directives() -> list[tuple[str, str]]:
    """(``::: name``, the API page's stem) for each directive of docs/reference/api/."""
    return [
        (name, file.stem)
        for file in sorted((DOCS / "reference" / "api").glob("*.md"))
        for name in re.findall(r"^::: ([\w.]+)", file.read_text(encoding="utf-8"), re.M)
    ]


def included(text: str) -> str:
    """``text`` with each snippet include line replaced by the file it names, indented as the
    line was."""

    def one(m: re.Match) -> str:
        file = ROOT / m[2]
        if not file.is_file() and m[2].startswith(GENERATED):
            return f"{m[1]}*(The benchmark's tables: {NOT_MADE}.)*"
        if not file.is_file():
            raise ValueError(f"{m[2]}: included by a page but missing")
        return "\n".join(m[1] + line for line in file.read_text(encoding="utf-8").splitlines())

    return SNIPPET.sub(one, text)


def admonition(marker: str, body: str) -> str:
    """An admonition (its ``!!! kind "Title"`` line and its body, unindented) as a quote."""
    m = ADMONITION.match(marker)
    title = m[2] if m and m[2] is not None else (m[1].capitalize() if m else marker)
    lines = [f"> **{title}**", ">", *(f"> {line}".rstrip() for line in body.splitlines())]
    return "\n".join(lines)
