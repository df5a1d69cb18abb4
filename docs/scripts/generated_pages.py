"""Write or check the generated pages of a docs script: ``render()`` gives each page's path
(relative to the repository root) and text; the pages that differ are written, or with
``--check`` named on stderr with the command that makes them, and the exit status is 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_pages(
    render: Callable[[], dict[str, str]], script: str, doc: str, root: Path, argv=None
) -> int:
    """The ``main`` of a page-making script: ``script`` its path as the reader runs it,
    ``doc`` its docstring (the first line is the --help text), ``root`` the folder the pages'
    paths start from (the repository's)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    check = parser.parse_args(argv).check
    stale = []
    for name, content in render().items():
        path = root / name
        if path.exists() and path.read_text(encoding="utf-8") == content:
            continue
        stale.append(name)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    for name in stale:
        print(f"{'stale' if check else 'wrote'}: {name}", file=sys.stderr if check else sys.stdout)
    if check and stale:
        print(f"run: .venv/bin/python {script}", file=sys.stderr)
    return 1 if check and stale else 0
