"""The Concepts pages and the tutorials as Jupyter notebooks, made from the pages' Markdown.

    python docs/scripts/notebooks.py notebooks          # notebooks/concepts/, notebooks/tutorials/
    python docs/scripts/notebooks.py --keep --site site notebooks   # make lab

One notebook (nbformat 4.5) per Concepts page with Python code (not the Overview, nor Notation,
which has none) and per tutorial, read with the pages' own parser (``fences()`` of
tests/docs/pages.py, the output includes of docs/scripts/outputs.py):

* a ```python block becomes a code cell; the output the page shows under it (its ```text
  include of docs/outputs/...) becomes the cell's recorded output;
* a tutorial's ```bash block becomes a code cell the kernel runs: ``cd DIR`` as ``%cd -q DIR``
  (IPython's own, so the folder stays for the next cells), every other command line as
  ``!command`` (continued lines joined); a Concepts page's shell lines stay text;
* the prose between becomes Markdown cells, one per section (docs/scripts/notebook_markdown.py:
  math, links into the site, pictures, includes, admonitions);
* a folded section (``??? success "Checks"``, ``??? tip "Solution"``: pymdownx.details, its
  lines indented 4 spaces) becomes a heading cell and its own cells, collapsed
  (``{"jupyter": {"source_hidden": true, "outputs_hidden": true}}``: JupyterLab shows a bar
  to click open); one open on the page (``???+``) and an admonition holding code get the
  heading without the folding, an admonition of text alone is a quote.

The notebooks are written with sorted keys and numbered cell ids, so each run writes the same
bytes. docs/hooks/notebooks.py ships them with the site (site/notebooks/<section>/<page>.ipynb);
``make lab`` writes them into notebooks/ with ``--site site`` (their links into the site reach
the site built in site/) and opens JupyterLab on the checkout, in notebooks/.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# ??? tip "Solution", ???+ (open), !!! note "Title": at the margin, or in a list item
MARKER = re.compile(r'^( *)(\?\?\?\+?|!!!) ([\w-]+)(?: +"([^"]*)")? *$')
HEADING = re.compile(r"^(#{1,6}) ")
FOLDED = {"jupyter": {"source_hidden": True, "outputs_hidden": True}}
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _load(stem: str):
    """docs/scripts/<stem>.py as a module (the scripts are not a package)."""
    name = f"docs_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "scripts" / f"{stem}.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


OUTPUTS = _load("outputs")  # blocks(), INCLUDE; OUTPUTS.STEPS: tests/docs/pages.py
MARKDOWN = _load("notebook_markdown")


def pages() -> list[Path]:
    """The pages that are also notebooks: the Concepts pages with a ```python block, the
    tutorials."""
    concepts = [
        page
        for page in sorted((DOCS / "concepts").glob("*.md"))
        if page.stem != "index" and any(b.kind == "python" for b in OUTPUTS.blocks(page))
    ]
    return [*concepts, *sorted((DOCS / "tutorials").glob("*.md"))]


def place(page: Path) -> str:
    """Where a page's notebook lies, relative to the notebooks' folder: concepts/attention.ipynb."""
    return f"{page.parent.name}/{page.stem}.ipynb"


def notebook(
    page: Path, text: str | None = None, site: str = MARKDOWN.SITE
) -> tuple[dict, dict[str, Path]]:
    """The notebook of ``page`` (a file under docs/; ``text``: its Markdown, read from it when
    not given), and the files to write beside the notebooks (the SVG pictures it shows).
    ``site``: the built site's root as a link from the notebook (its place in the site's own
    notebooks/ unless told)."""
    text = page.read_text(encoding="utf-8") if text is None else text
    title = re.search(r"^# .*\n", text, re.M)
    if title:  # what the notebook is, under the page's title
        note = (
            f"\n*The page [{title[0][2:].strip()}]({page.name}) of the glassformer documentation "
            f"as a notebook, made from docs/{page.parent.name}/{page.name}: run the cells from "
            "the top (Run > Run All Cells).*\n"
        )
        text = text[: title.end()] + note + text[title.end() :]
    prose = MARKDOWN.Prose(f"{page.parent.name}/{page.name}", site)
    cells = _cells(text, prose, tutorial=page.parent.name == "tutorials", hidden=False, level=1)
    for n, cell in enumerate(cells, 1):
        cell["id"] = f"cell-{n}"
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": KERNEL, "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return nb, dict(prose.files)


def _cells(text: str, prose, tutorial: bool, hidden: bool, level: int) -> list[dict]:
    """The cells of ``text`` (a page, or a folded section's lines unindented)."""
    lines = text.split("\n")
    fence_at = {text.count("\n", 0, f.start): f for f in OUTPUTS.STEPS.fences(text)}
    out: list[dict] = []
    buffer: list[str] = []

    def flush() -> None:
        md = "\n".join(buffer).strip("\n")
        buffer.clear()
        if md.strip():
            source, attachments = prose.cell(MARKDOWN.included(md))
            out.append(_markdown(source, attachments, hidden))

    i = 0
    while i < len(lines):
        fence, marker = fence_at.get(i), MARKER.match(lines[i])
        if fence is not None:
            last = text.count("\n", 0, fence.end)  # the line of its closing fence
            if fence.lang == "python" or (fence.lang == "bash" and tutorial):
                flush()
                shown = OUTPUTS.INCLUDE.match(text[fence.end :])
                if shown:
                    last = text.count("\n", 0, fence.end + shown.end())
                code = fence.body if fence.lang == "python" else shell(fence.body)
                out.append(_code(code, _read(shown[2]) if shown else None, hidden))
            else:
                buffer += lines[i : last + 1]
            i = last + 1
        elif marker:
            inner, end = marker[1] + "    ", i + 1  # its body: the lines indented 4 more
            while end < len(lines) and (lines[end].startswith(inner) or not lines[end].strip()):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            body = "\n".join(line[len(inner) :] for line in lines[i + 1 : end])
            if marker[2] == "!!!" and not OUTPUTS.STEPS.fences(body):
                buffer.append(MARKDOWN.admonition(lines[i].strip(), body))
            else:
                flush()
                heading = "#" * min(level + 1, 6) + " " + (marker[4] or marker[3].capitalize())
                out.append(_markdown(heading, {}, hidden))
                folded = hidden or marker[2] == "???"
                out += _cells(body, prose, tutorial, folded, level + 1)
            i = end
        else:
            heading = HEADING.match(lines[i])
            if heading:
                flush()
                level = len(heading[1])
            buffer.append(lines[i])
            i += 1
    flush()
    return out


def _read(path: str) -> str:
    file = ROOT / path
    if not file.is_file():
        raise ValueError(f"{path}: a page shows it as a block's output, but it is missing")
    return file.read_text(encoding="utf-8")


def _lines(text: str) -> list[str]:
    """A cell's text as nbformat stores it: its lines, each with its newline but the last."""
    return text.splitlines(keepends=True)


def _markdown(source: str, attachments: dict, hidden: bool) -> dict:
    cell = {"cell_type": "markdown", "metadata": FOLDED if hidden else {}, "source": _lines(source)}
    if attachments:
        cell["attachments"] = attachments
    return cell


def _code(source: str, output: str | None, hidden: bool) -> dict:
    printed = [{"name": "stdout", "output_type": "stream", "text": _lines(output or "")}]
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": FOLDED if hidden else {},
        "outputs": printed if output else [],
        "source": _lines(source.rstrip("\n")),
    }


def shell(block: str) -> str:
    """A ```bash block as IPython lines: ``cd DIR`` -> ``%cd -q DIR``, each other command
    ``!command`` (IPython's ``$`` and braces escaped), a continued line joined into one;
    comments and blank lines kept."""
    out, pending = [], ""
    for line in block.splitlines():
        line = f"{pending} {line.strip()}" if pending else line
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1].rstrip()
            continue
        pending = ""
        out += _shell_line(line.strip())
    return "\n".join(out)


def _shell_line(line: str) -> list[str]:
    if not line or line.startswith("#"):
        return [line]
    command, comment = _comment(line)
    parts = [part.strip() for part in command.split(" && ")]
    if not any(part.startswith("cd ") for part in parts):
        return ["!" + _escape(line)]
    out, group = [f"# {comment.lstrip('# ')}"] if comment else [], []
    for part in parts:
        if part.startswith("cd "):
            out += ["!" + _escape(" && ".join(group))] if group else []
            out.append(f"%cd -q {part[3:].strip()}")
            group = []
        else:
            group.append(part)
    return out + (["!" + _escape(" && ".join(group))] if group else [])


def _comment(line: str) -> tuple[str, str]:
    """A command line's command and its trailing comment (empty when none)."""
    for m in re.finditer(r"\s#", line):
        try:
            if shlex.split(line[: m.start()]) == shlex.split(line, comments=True):
                return line[: m.start()].rstrip(), line[m.start() :].strip()
        except ValueError:  # the # sits inside quotes
            continue
    return line, ""


def _escape(command: str) -> str:
    """IPython expands ``$name`` and ``{expression}`` in a ``!`` line: doubled, they stay."""
    return command.replace("$", "$$").replace("{", "{{").replace("}", "}}")


def dumps(nb: dict) -> str:
    """The notebook's file: JSON as nbformat writes it (indent 1, sorted keys)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write(folder: Path, keep: bool = False, site: Path | None = None) -> list[Path]:
    """Every page's notebook under ``folder`` (``concepts/<page>.ipynb``,
    ``tutorials/<page>.ipynb``) and the pictures they link beside them; the notebooks written.
    With ``keep``, a notebook already there is left as it is (a reader's work); ``site``, the
    built site's folder that their links reach (the notebooks' place in the site unless told)."""
    root = MARKDOWN.SITE
    if site is not None:  # each notebook lies one folder down: concepts/, tutorials/
        root = Path(os.path.relpath(site.resolve(), (folder / "concepts").resolve())).as_posix()
        root += "/"
    made = [(page, *notebook(page, site=root)) for page in pages()]  # all before any written
    written = []
    for page, nb, files in made:
        target = folder / place(page)
        if keep and target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dumps(nb), encoding="utf-8")
        written.append(target)
        for name, file in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, folder / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where to write them (make lab: notebooks)")
    parser.add_argument("--keep", action="store_true", help="leave the notebooks already there")
    parser.add_argument(
        "--site", type=Path, help="the built site's folder, reached by their links (make lab: site)"
    )
    args = parser.parse_args(argv)
    try:
        written = write(args.folder, args.keep, args.site)
    except ValueError as error:
        print(f"notebooks.py: {error}", file=sys.stderr)
        return 2
    kept = len(pages()) - len(written)
    print(f"{len(written)} notebooks written into {args.folder}/ (concepts/, tutorials/)")
    if kept:
        print(f"{kept} kept as they were: delete one to get its page's current notebook")
    return 0


if __name__ == "__main__":
    sys.exit(main())
