"""The README, the documentation and the docstrings speak of the software and of what was
measured, never of the history of the work: a page that narrates it ("in this session",
"re-run in a later session") fails here."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "src" / "glassformer").rglob("*.py")),  # the docstrings the API pages show
]
HISTORY = re.compile(
    r"\b(this|that|the next|the last|a later|later|previous|earlier|an earlier) session"
    r"|\bin the latest run\b|\bthe previous run\b|\bwe (added|fixed|changed)\b"
    r"|\bis now\b|\bnow supports\b|\bwas fixed\b",
    re.I,
)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_the_page_does_not_narrate_the_project_history(page):
    found = [
        f"line {n}: {match.group(0)!r}"
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for match in HISTORY.finditer(line)
    ]
    assert not found, f"{page.name} narrates the work's history: {found}"


@pytest.mark.parametrize(
    "text",
    ["Measured in this session.", "re-run in a later session", "the previous session's run",
     "In the latest run it took 3 s.", "We added a cache."],
)  # fmt: skip
def test_the_phrases_are_caught(text):
    assert HISTORY.search(text)


def test_a_description_of_the_software_passes():
    text = "Measured with `python -m benchmarks` on a 2-core AMD EPYC (torch 2.13)."
    assert not HISTORY.search(text)
