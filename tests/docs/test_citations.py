"""The sources the docs and docstrings cite, checked against what those sources contain.

The lecture notes number no algorithms; the algorithm numbers and names (EDTransformer,
DTraining, DInference, ...) are those of Phuong and Hutter, "Formal Algorithms for
Transformers" (2022, arXiv:2207.09238), whose Algorithms 8 to 14 are listed in PAPER. Every
place that pairs a number with one of those names must pair them as the paper does, and no
algorithm past the paper's last is cited. Algorithms 8 and 9 are post-norm and 10 is pre-norm
(LAYOUT): a clause that names one layout and cites algorithms cites only those of that layout.
Numbered equations belong to the notes that number theirs ("What Happens in A Transformer
Layer", "NPFL140 Lecture Notes"); the notes cite no table (Vaswani et al.'s Table 1 is not
theirs). The home page names every set of notes the concept pages cite (line breaks read as
spaces).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER = {
    8: "EDTransformer",
    9: "ETransformer",
    10: "DTransformer",
    11: "EDTraining",
    12: "ETraining",
    13: "DTraining",
    14: "DInference",
}
LAST = 14  # the paper's last algorithm
# Where each transformer algorithm puts its layer_norm: after the residual addition (8, 9) or
# before the sub-layer (10).
LAYOUT = {8: "post-norm", 9: "post-norm", 10: "pre-norm"}
# The lecture notes, by the title each opens with.
NOTES = (
    "What Happens in A Transformer Layer",
    "Formal Algorithms for Transformers",
    "Transformer: Self-Attention and Parallelization",
    "Brief Notes on Transformers",
    "NPFL140 Lecture Notes",
)
# The notes that number their equations: "Eq. (2) of <title>" is right only for these.
NUMBERED = ("What Happens in A Transformer Layer", "NPFL140 Lecture Notes")
# A name of the paper's kind: E/D/ED followed by Transformer, Training or Inference.
NAME = r"(?:ED|E|D)(?:Transformer|Training|Inference)"
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # [text](target)
S = r"[\s,:]+"  # what separates a number from its name, line breaks included


def sources() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "src" / "glassformer").rglob("*.py"))
    return [f for f in files if "generated" not in f.parts]


def pairs(text: str) -> list[tuple[int, str]]:
    """Every (number, name) the text pairs: "Algorithm 13, EDTraining", "DTraining (Algorithm
    13)", "Algorithms 8 (EDTransformer), 9 (ETransformer)", "Algorithms 11-13: A, B, C"."""
    found = [(int(n), m) for n, m in re.findall(rf"Algorithm (\d+){S}\(?({NAME})\b", text)]
    found += [(int(n), m) for m, n in re.findall(rf"\b({NAME}){S}\(Algorithm (\d+)\)", text)]
    found += [(int(n), m) for n, m in re.findall(rf"\b(\d+) \(({NAME})\)", text)]
    listing = rf"Algorithms (\d+)\s*-\s*(\d+){S}((?:{NAME}(?:,\s*|\s+and\s+)?)+)"
    for a, b, names in re.findall(listing, text):
        listed = re.findall(NAME, names)
        found += list(zip(range(int(a), int(b) + 1), listed, strict=False))
    return found


def test_pairs_reads_each_form():
    assert pairs("(Algorithm 13,\nEDTraining)") == [(13, "EDTraining")]
    assert pairs("DInference (Algorithm 14)") == [(14, "DInference")]
    assert pairs("Algorithms 8 (EDTransformer), 9 (ETransformer)") == [
        (8, "EDTransformer"), (9, "ETransformer"),
    ]  # fmt: skip
    assert pairs("Algorithms 11-13: DTraining, ETraining, EDTraining") == [
        (11, "DTraining"), (12, "ETraining"), (13, "EDTraining"),
    ]  # fmt: skip


def problems(text: str) -> list[str]:
    """What the text cites that the paper does not have (a link's text read as plain text)."""
    text = LINK.sub(r"\1", text)
    out = [f"Algorithm {n}, {m} (the paper's {n} is {PAPER.get(n)})"
           for n, m in pairs(text) if PAPER.get(n) != m]  # fmt: skip
    out += [f"{m}: not a name of the paper" for m in sorted(set(re.findall(rf"\b{NAME}\b", text)))
            if m not in PAPER.values()]  # fmt: skip
    past = re.findall(r"Algorithms? (\d+)", text) + re.findall(r"Algorithms \d+\s*-\s*(\d+)", text)
    out += [f"Algorithm {n}: past the paper's last ({LAST})" for n in past if int(n) > LAST]
    out += [f"the notes' {m}: the notes have none, it is Phuong and Hutter's"
            for m in re.findall(rf"the notes' ({NAME})", text)]  # fmt: skip
    return out + layout_problems(text) + notes_problems(text)


def clauses(text: str) -> list[str]:
    """The text cut at sentence and clause ends (". ", "; ", a blank line), spaces joined."""
    return [" ".join(c.split()) for c in re.split(r"[.;]\s|\n\s*\n", text)]


def layout_problems(text: str) -> list[str]:
    """Algorithms cited in a clause that names one layout (pre-norm or post-norm) but that
    have the other one."""
    out = []
    for clause in clauses(text):
        named = {w for w in LAYOUT.values() if w in clause}
        if len(named) != 1 or "Algorithm" not in clause:
            continue
        (layout,) = named
        cited = clause[clause.index("Algorithm") :]
        numbers = {int(n) for n in re.findall(r"\b(\d{1,2})\b", cited)}
        for a, b in re.findall(r"\b(\d{1,2})\s*[-–]\s*(\d{1,2})\b", cited):
            numbers |= set(range(int(a), int(b) + 1))
        out += [f"Algorithm {n} called {layout}: the paper's is {LAYOUT[n]}"
                for n in sorted(numbers) if n in LAYOUT and LAYOUT[n] != layout]  # fmt: skip
    return out


def notes_problems(text: str) -> list[str]:
    """Equation numbers credited to notes that number none; a table the notes are said to
    cite."""
    flat = " ".join(text.split())
    titles = "|".join(re.escape(t) for t in NOTES)
    credited = rf'Eqs?\. (\(\d+\)[^"]{{0,12}}?) (?:of|in) "({titles})'
    out = [f"Eq. {eq} of {title!r}: those notes number no equations"
           for eq, title in re.findall(credited, flat) if title not in NUMBERED]  # fmt: skip
    out += [f"{title!r}, Eq. {eq}: those notes number no equations"
            for title, eq in re.findall(rf'"({titles})"?,? Eqs?\. (\(\d+\))', flat)
            if title not in NUMBERED]  # fmt: skip
    said = r"\b(?:the notes|they)\b[^.;]*\b(?:point|points|refer|refers|cite|cites)\b[^.;]*"
    out += [f"the notes cite no table: {m!r}" for m in re.findall(rf"{said}\bTable \d+", flat)]
    return out


def test_problems_finds_each_kind():
    assert problems("Algorithm 11, EDTraining; DInference (Algorithm 14)") == []
    assert problems("Algorithm 15, EDInference, the notes' DTraining") == [
        "Algorithm 15, EDInference (the paper's 15 is None)",
        "EDInference: not a name of the paper",
        "Algorithm 15: past the paper's last (14)",
        "the notes' DTraining: the notes have none, it is Phuong and Hutter's",
    ]


def test_layouts_equations_and_tables_are_checked():
    assert problems("Algorithms 8-10, is\npre-norm, layer_norm first") == [
        "Algorithm 8 called pre-norm: the paper's is post-norm",
        "Algorithm 9 called pre-norm: the paper's is post-norm",
    ]
    assert problems("Algorithms 8 (EDTransformer) and 9 (ETransformer) are post-norm; "
                    "Algorithm 10 (DTransformer) is pre-norm") == []  # fmt: skip
    assert problems('Eq. (1)-(3) of "Formal Algorithms for\nTransformers" over') == [
        "Eq. (1)-(3) of 'Formal Algorithms for Transformers': those notes number no equations"
    ]
    assert problems('Eq. (1)-(3) of "What Happens in A Transformer Layer" over') == []
    assert problems('"NPFL140 Lecture Notes", Eq. (2)') == []
    assert problems("The comparison they point to is Table 1 of Vaswani et al.") == [
        "the notes cite no table: 'they point to is Table 1'"
    ]
    assert problems("The comparison is Table 1 of Vaswani et al.; the notes cite no table") == []


def test_algorithm_numbers_and_names_are_the_papers():
    found = {str(p.relative_to(ROOT)): problems(p.read_text(encoding="utf-8")) for p in sources()}
    assert len(found) > 100  # README, the docs and the package's modules
    assert not {path: found_ for path, found_ in found.items() if found_}


def test_home_page_names_every_set_of_notes():
    home = " ".join((ROOT / "docs" / "index.md").read_text(encoding="utf-8").split())
    pages = (ROOT / "docs" / "concepts").glob("*.md")
    concepts = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in pages)
    for title in NOTES:
        assert title in concepts, f"no concept page cites {title!r}: update NOTES"
        assert title in home, f"the home page does not name {title!r}"


def test_each_page_links_its_first_citation_of_the_notes_to_the_references():
    """The first time a page quotes the title of a set of notes, the title links to its entry on
    docs/references.md (a page that cites them in a heading only is not read)."""
    unlinked = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        rel = page.relative_to(ROOT / "docs").as_posix()
        if rel == "references.md" or rel.startswith(("reference/api/", "outputs/")):
            continue
        text = " ".join(page.read_text(encoding="utf-8").split())
        for title in (*NOTES[:4], "NPFL140"):
            first = text.find(f'"{title}')
            if first >= 0 and text[first - 1 : first] != "[":
                unlinked.append(f"{rel}: {title}")
            elif first >= 0:
                assert "references.md#" in text[first : first + 200], (rel, title)
    assert not unlinked, unlinked
