"""The formulas of the built site, as a reader sees them in the system's Chromium (driven by
Playwright, as tests/explore/test_browser.py does): every formula of every page is MathML with
no TeX left in it, the site's math font is loaded from the site itself, the braces of cases
stretch over their rows, and two display formulas in a row stand apart. Screenshots of the
formulas looked at go to build/test-artifacts/formulas/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "formulas"

pytestmark = pytest.mark.slow  # reads the site built once for the run (built_site)


@pytest.fixture(scope="module")
def site(built_site) -> Path:
    return built_site


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def open_page(page, site: Path, name: str):
    """Concept page ``name`` from disk, with or without mkdocs' directory URLs."""
    path = site / "concepts" / f"{name}.html"
    page.goto((path if path.is_file() else site / "concepts" / name / "index.html").as_uri())
    page.wait_for_load_state("load")
    page.evaluate("document.fonts.ready")


def test_no_page_of_the_site_keeps_tex(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    formulas = 0
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert 'class="arithmatex"' not in text, path
        for formula in re.findall(r"<math\b.*?</math>", text, re.S):
            formulas += 1
            assert "\\" not in formula, f"{path}: TeX left in {formula[:300]}"
            shown = re.sub(r"<[^>]+>", "", formula)  # the text a reader sees
            assert not re.search(r"\[\d*\.?\d+(ex|em|pt)\]", shown), f"{path}: {shown}"
    assert formulas > 300


def test_the_math_font_comes_with_the_site(page, site):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    open_page(page, site, "positional")
    assert page.evaluate("document.fonts.check('16px \"Glassformer Math\"')")
    family = page.evaluate("getComputedStyle(document.querySelector('math')).fontFamily")
    assert family.startswith('"Glassformer Math"'), family
    fonts = [url for url in requests if url.endswith(".woff")]
    assert fonts and all(url.startswith("file://") for url in fonts), fonts


@pytest.mark.parametrize("name", ["positional", "training", "attention"])
def test_the_brace_of_cases_stretches_over_its_rows(page, site, name):
    open_page(page, site, name)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    formulas = page.locator("math[display=block]:has(mtable)")
    assert formulas.count() >= 1
    for i in range(formulas.count()):
        formula = formulas.nth(i)
        formula.scroll_into_view_if_needed()
        formula.screenshot(path=ARTIFACTS / f"{name}-cases-{i}.png")
        brace = formula.locator('mo[form="prefix"]').first.bounding_box()
        table = formula.locator("mtable").first.bounding_box()
        assert brace["height"] >= 0.9 * table["height"], (name, i, brace, table)


def test_display_formulas_in_a_row_stand_apart(page, site):
    """Eqs. (4) and (5) on the multi-head page: two display formulas, one after the other."""
    open_page(page, site, "multi-head")
    first, second = (page.locator("math[display=block]").nth(i) for i in (0, 1))
    assert "(4)" in first.text_content() and "(5)" in second.text_content()
    first.scroll_into_view_if_needed()
    a, b = first.bounding_box(), second.bounding_box()
    line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('.md-typeset p'))"
                         ".fontSize)")  # fmt: skip
    assert b["y"] - (a["y"] + a["height"]) >= 0.75 * line, (a, b, line)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = b["y"] + b["height"] - a["y"] + 20
    clip = {"x": a["x"], "y": a["y"] - 10, "width": a["width"], "height": height}
    page.screenshot(path=ARTIFACTS / "multi-head-eqs-4-5.png", clip=clip)
