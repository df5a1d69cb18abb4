"""One notation for the whole site (docs/concepts/notation.md): the table gives each symbol one
meaning, it opens the Concepts section, every concept page links it near its top, and the
formulas of the concept pages write the site's letters, not the notes' ones the table maps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONCEPTS = ROOT / "docs" / "concepts"
NOTATION = CONCEPTS / "notation.md"
PAGES = sorted(p for p in CONCEPTS.glob("*.md") if p != NOTATION)
FORMULA = re.compile(r"\\\((.*?)\\\)|\$\$(.*?)\$\$", re.S)
FENCE = re.compile(r"^( *)```.*?^\1```", re.S | re.M)  # at the margin or in a fold
# the notes' letters for what the site writes otherwise (notation.md, last column)
NOTES_LETTERS = {
    r"\\sqrt\s*\{?D\b": "the width is C: √C",
    r"\bL\^\{": "the sinusoids' base is 10000",
    r"\^\{\(M\)\}": "the last block is L: X^(L)",
    r"\[\\ell\]|:\\ell\]|\^\\ell\b": "a length is T",
    r"\\in V\b|(?<!\\mathcal )V\^\*": "the vocabulary is \\mathcal V",
    r"\\mathbb\{?R\}?\^\{D \\times (N_V|T|\\ell)": "the width is C: R^{C x N_V}",
    r"K = D/H": "the head size is D = C/H",
}


# a formula right after "the notes write" or "the note's" shows the notes' letters on purpose
QUOTED = re.compile(r"(notes|note) writes?( \S+)?$|(notes'|note's)( \S+)?$")


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data; a tag such as !!python/name:... reads as None."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)


def formulas(page: Path) -> list[str]:
    """The page's formulas in the site's voice: not those said to be the notes' letters."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    before = lambda m: " ".join(text[max(m.start() - 40, 0) : m.start()].split())  # noqa: E731
    return [m[1] or m[2] for m in FORMULA.finditer(text) if not QUOTED.search(before(m))]


def symbols() -> list[str]:
    """The first cell of every row of the notation tables."""
    rows = [line for line in NOTATION.read_text(encoding="utf-8").splitlines()]
    cells = [line.split(" | ")[0].removeprefix("| ") for line in rows if line.startswith("| \\(")]
    return [s for cell in cells for s in re.findall(r"\\\((.*?)\\\)", cell)]


def test_each_symbol_of_the_table_has_one_row():
    found = symbols()
    assert len(found) > 40
    twice = {s for s in found if found.count(s) > 1}
    assert not twice, f"symbols listed twice in notation.md: {sorted(twice)}"
    for letter in ("B", "T", "S", "C", "H", "D", "L", "N_V"):  # the shapes' letters
        assert letter in found, letter


def test_the_table_opens_the_concepts_section():
    """First in the Concepts section after the pages that open it: the overview
    (concepts/index.md) and "The transformer in one picture", which a newcomer reads first
    (the table is a reference to skim beside the pages)."""
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)["nav"]
    concepts = next(entry["Concepts"] for entry in nav if "Concepts" in entry)
    pages = [path for entry in concepts for path in entry.values()]
    opening = ("concepts/index.md", "concepts/one-picture.md")
    assert pages[: pages.index("concepts/notation.md")] == list(opening), pages
    pages = [path for path in pages if path not in opening]
    assert pages[0] == "concepts/notation.md", pages


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_concept_page_links_the_table_near_its_top(page):
    top = page.read_text(encoding="utf-8").splitlines()[:4]
    assert any("](notation.md)" in line for line in top), f"{page.name}: no link to notation.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_formulas_write_the_sites_letters(page):
    for tex in formulas(page):
        for pattern, why in NOTES_LETTERS.items():
            assert not re.search(pattern, tex), f"{page.name}: {tex!r}: {why} (notation.md)"


# the "separate" score of query n against key n′ written with the projections swapped
SWAPPED_QK = re.compile(r"U_k\s*(\^\\intercal|\^\\top|\^T|ᵀ)\s*U_q")


def test_the_separate_score_is_written_as_the_code_computes_it():
    """Query n against key n′ scores q_n · k_n′ = xₙᵀU_qᵀU_k x_n′ (what MultiHeadAttention
    computes, tests/nn/test_attention_scores.py); the transpose xₙᵀU_kᵀU_q x_n′ appears only in
    a paragraph that names it the notes' slip."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    files += [*(ROOT / "src").rglob("*.py"), *(ROOT / "src").rglob("*.toml")]
    wrong = [
        f"{path.relative_to(ROOT)}: {' '.join(paragraph.split())[:120]}"
        for path in files
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))
        if SWAPPED_QK.search(paragraph) and "slip" not in paragraph
    ]
    assert wrong == []
