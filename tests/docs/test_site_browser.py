"""The built documentation site in a real browser (the system's Chromium through Playwright, as
in tests/explore/test_browser.py), opened from disk as the README says: every entry of the
navigation opens its page, search finds pages, no page asks anything of the network, and the
display formulas keep to the text column (a wide one scrolls inside its own box) on a phone and
on a desktop. The site is built once for the module, strict, into a temporary folder."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONCEPTS = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs" / "concepts").glob("*.md"))
NAV_LINKS = ".md-nav--primary a.md-nav__link[href]"
FORMULAS = 'article math[display="block"]'


def page_title(nav_title: str) -> str:
    return "glassformer" if nav_title == "Home" else f"{nav_title} - glassformer"


def html_path(md: Path | str) -> str:
    return Path(md).with_suffix(".html").as_posix()


def nav_pages(entries, top: bool = True) -> list[tuple[str, str, bool]]:
    """(title, page .md path, opened) for every page of mkdocs.yml's nav, in order; the test
    opens by a click each page at the top level and the first page of each section."""
    out = []
    for i, entry in enumerate(entries):
        ((title, target),) = entry.items()
        if isinstance(target, list):
            out += nav_pages(target, top=False)
        else:
            out.append((title, target, top or i == 0))
    return out


NAV = nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])


@pytest.fixture(scope="module")
def site(built_site) -> Path:
    return built_site


@pytest.fixture
def context(browser):
    """A browser context that logs every request any of its pages or frames makes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.requests = []
    context.on("request", lambda request: context.requests.append(request.url))
    yield context
    context.close()


def open_page(context, site: Path, path: str, width: int = 1280):
    page = context.pages[0] if context.pages else context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto((site / path).as_uri())
    return page


def search(page, word: str) -> list[str]:
    """Type ``word`` into the search box and return the hrefs of the results shown."""
    meta = page.locator(".md-search-result__meta")
    page.click("input.md-search__input")  # the search starts when its box is first focused
    page.wait_for_function(  # its index is loaded: the prompt no longer says "Initializing"
        "() => !document.querySelector('.md-search-result__meta')"
        ".textContent.includes('Initializing')",
        timeout=10_000,
    )
    page.keyboard.type(word)
    page.wait_for_selector(".md-search-result__item", timeout=10_000)
    assert "matching document" in meta.inner_text()
    return page.eval_on_selector_all(".md-search-result__item > a", "els => els.map(a => a.href)")


def test_every_navigation_entry_opens_its_page_from_disk(context, site):
    """From pages at every depth of the site the navigation links every page of mkdocs.yml's
    nav to its file (a page, with its title and heading, never a folder); clicking them opens
    the pages in the browser."""
    expected = [(title, (site / html_path(md)).as_uri()) for title, md, _ in NAV]
    for title, href in expected:
        text = Path(url2pathname(urlparse(href).path)).read_text(encoding="utf-8")
        assert f"<title>{page_title(title)}</title>" in text and "<h1" in text, href
    page = open_page(context, site, "index.html")
    for (title, href), (*_, opened) in zip(expected, NAV, strict=True):
        if not opened:
            continue
        found = page.eval_on_selector_all(NAV_LINKS, "els => els.map(a => [a.textContent, a.href])")
        links = [(text.strip(), url) for text, url in found if "#" not in url]
        assert links == expected, f"the navigation of {page.url}"
        link = page.locator(NAV_LINKS).nth([url for _, url in found].index(href))
        with page.expect_navigation():  # the link as the reader clicks it
            link.dispatch_event("click")
        assert page.url == href
        assert page.locator("article h1").count() == 1, f"{href} opened no page (a folder?)"
        assert page.title() == page_title(title)


def test_search_works_from_disk(context, site):
    page = open_page(context, site, "index.html")
    found = search(page, "residual")
    assert (site / "concepts/norms-residuals.html").as_uri() in [u.split("#")[0] for u in found]
    # a result opens its page, and search works again from a page one folder down
    with page.expect_navigation():
        page.locator(".md-search-result__item > a").first.click()
    assert page.url.startswith((site / "").as_uri()) and page.locator("article h1").count() == 1
    page = open_page(context, site, "concepts/attention.html")
    assert any("/guide/" in u for u in search(page, "freezing"))


def test_no_page_requests_anything_outside_the_site(context, site):
    pages = ["index.html", "concepts/positional.html", "reference/api/models.html"]
    for path in pages:
        page = open_page(context, site, path)
    search(page, "attention")  # the search worker (in an iframe under file://) and its index
    assert len(context.requests) > len(pages)
    assert [url for url in context.requests if not url.startswith("file://")] == []


MEASURE = """selector => {
  const column = document.querySelector('.md-content__inner').getBoundingClientRect();
  const page = document.scrollingElement;
  return {
    page: [page.scrollWidth, page.clientWidth],
    column: [column.left, column.right],
    formulas: [...document.querySelectorAll(selector)].map(m => {
      const box = m.getBoundingClientRect();
      const wide = m.scrollWidth > m.clientWidth + 1;  // 1 px: sizes rounded apart
      m.scrollLeft = m.scrollWidth;
      const scrolled = m.scrollLeft;
      m.scrollLeft = 0;
      const clips = getComputedStyle(m).overflowY !== 'visible';
      const clipped = clips && m.scrollHeight > m.clientHeight + 1;
      return {left: box.left, right: box.right, wide, scrolled, clipped,
              text: m.textContent.slice(0, 40)};
    }),
  };
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_formulas_keep_to_the_text_column(context, site, width):
    """No concept page scrolls sideways; every display formula lies inside the text column, a
    wider one scrolls inside its own box, and none is cut off at the top or bottom."""
    faults, formulas, scrolling = [], 0, 0
    for md in CONCEPTS:
        page = open_page(context, site, html_path(md), width)
        seen = page.evaluate(MEASURE, FORMULAS)
        if seen["page"][0] > seen["page"][1]:
            faults.append(f"{md}: the page is {seen['page'][0]} px wide in a {seen['page'][1]}")
        left, right = seen["column"]
        formulas += len(seen["formulas"])
        for f in seen["formulas"]:
            where = f"{md}: the formula {f['text']!r}"
            if f["left"] < left - 1 or f["right"] > right + 1:
                faults.append(
                    f"{where} spans {f['left']:.0f}-{f['right']:.0f} px, "
                    f"outside the column {left:.0f}-{right:.0f}"
                )
            if f["wide"] and not f["scrolled"]:
                faults.append(f"{where} is wider than its box and does not scroll")
            if f["clipped"]:
                faults.append(f"{where} is cut off at the top or bottom")
            scrolling += f["wide"] and f["scrolled"] > 0
    assert faults == [], "\n".join(faults)
    assert formulas > 0, f"no {FORMULAS} on the concept pages"
    if width == 390:  # the phone shows some formulas that only fit by scrolling
        assert scrolling > 0
