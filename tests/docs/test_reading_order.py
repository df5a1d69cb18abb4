"""How a reader moves through the site: the Concepts overview gives the pages in the menu's
order, each page links to the next (Material's navigation.footer), every page shows the version
of glassformer it documents, and the classifier tutorial follows one model from start to end."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import glassformer
from glassformer.structured import loads_toml

ROOT = Path(__file__).resolve().parents[2]
OVERVIEW = ROOT / "docs" / "concepts" / "index.md"


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data; a tag such as !!python/name:... reads as None."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)


def mkdocs() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)


def concepts_nav() -> list[str]:
    """The Concepts section of the menu: the pages, in order, relative to docs/concepts/."""
    (section,) = [item["Concepts"] for item in mkdocs()["nav"] if "Concepts" in item]
    return [next(iter(entry.values())).removeprefix("concepts/") for entry in section]


def test_overview_opens_concepts_and_numbers_them_in_the_menus_order():
    nav = concepts_nav()
    assert nav[0] == "index.md"
    text = OVERVIEW.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| \[[^\]]+\]\(([\w.-]+\.md)\) \| (.+) \|$", text, re.M)
    assert [int(n) for n, _, _ in rows] == list(range(1, len(rows) + 1))
    numbered = [page for _, page, _ in rows]
    assert numbered == [page for page in nav if page in numbered]  # the same order
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", text))
    assert linked >= set(nav[1:]), f"in the menu, not in the overview: {set(nav[1:]) - linked}"
    assert all(question.strip().endswith("?") for _, _, question in rows)
    on_disk = {p.name for p in OVERVIEW.parent.glob("*.md")}
    assert set(nav) == on_disk, f"concept pages not in the menu: {on_disk - set(nav)}"


def test_pages_link_to_the_previous_and_next():
    assert "navigation.footer" in mkdocs()["theme"]["features"]


def test_site_shows_the_packages_version():
    pyproject = loads_toml((ROOT / "pyproject.toml").read_text(encoding="utf-8"), "pyproject.toml")
    assert pyproject["project"]["version"] == glassformer.__version__
    assert mkdocs()["copyright"] == f"glassformer {glassformer.__version__}"


def test_classifier_tutorial_uses_one_model_throughout():
    text = (ROOT / "docs" / "tutorials" / "classifier.md").read_text(encoding="utf-8")
    trains = re.findall(r"^glassformer train (?:.*\\\n)*.*", text, re.M)  # with its \ lines
    assert len(trains) == 1, trains
    (out,) = re.findall(r"--out (\S+)", trains[0])
    used = re.findall(r"--checkpoint (\S+)", text) + re.findall(r'load_model\("([^"]+)"\)', text)
    assert used and set(used) == {out}, used


def test_a_newcomer_is_given_a_path_a_glossary_and_the_sources():
    """The home page gives a newcomer a reading path that starts with "The transformer in one
    picture" and links the Glossary and References; the concept pages that assume only linear
    algebra (1 to 6 of the overview, the picture first) link the glossary where they first use
    a term (the strict build checks that each link's anchor exists)."""
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "## New to transformers? Start here" in home
    path = home.split("## New to transformers? Start here", 1)[1].split("\n## ", 1)[0]
    steps = re.findall(r"^\d+\. .*?\]\(([\w./-]+\.md)\)", path, re.M)
    assert steps[0] == "concepts/one-picture.md", steps
    assert "(glossary.md)" in home and "(references.md)" in home
    overview = OVERVIEW.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| \[[^\]]+\]\(([\w.-]+\.md)\)", overview, re.M)
    first_six = [page for n, page in rows if int(n) <= 6]
    assert first_six[0] == "one-picture.md" and len(first_six) == 6
    for page in first_six:
        assert "](../glossary.md#" in (OVERVIEW.parent / page).read_text(encoding="utf-8"), page
