"""Every ```python block of the pages that give no shell command runs as written, each on its
own in a fresh namespace and an empty folder, so the examples cannot rot. The pages that give
commands (the README, the tutorials, ...) are walked as a whole, their Python blocks in page
order after the commands before them: tests/docs/test_walk.py."""

import pytest

from .conftest import PAGES, name, steps, walked

BLOCKS = [
    (name(page), step.line, step.text)
    for page in PAGES
    if not walked(page)
    for step in steps(page)
    if step.kind == "python"
]


@pytest.mark.parametrize(("page", "line", "code"), BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_example_runs(page, line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} line {line}", "exec"), {"__name__": "__example__"})


def test_the_docs_hold_examples():
    pages = {page for page, _, _ in BLOCKS}
    assert len(pages) >= 10, sorted(pages)


def test_every_python_block_runs_somewhere():
    """A page's Python blocks run here, or in the walk of the page (test_walk.py)."""
    for page in PAGES:
        blocks = [s for s in steps(page) if s.kind == "python"]
        here = [b for b in BLOCKS if b[0] == name(page)]
        assert walked(page) or len(here) == len(blocks), name(page)
