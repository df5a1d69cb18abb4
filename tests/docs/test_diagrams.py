"""The block diagrams of "The transformer in one picture" (docs/images/diagrams/*.svg, written by
docs/scripts/diagrams.py): each is well-formed SVG with a title and a description for screen
readers, scales with the text column (a viewBox as wide as the column), writes its words as
text in the system's fonts, dark on light, and asks nothing of the network (no script, no link,
no image, no font to fetch); the committed files are what the script writes; the page shows
each of them, names each part as the concept pages do and links the page that explains it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from .pages import ROOT, load_script

FOLDER = ROOT / "docs" / "images" / "diagrams"
CONCEPTS = ROOT / "docs" / "concepts"
PAGE = CONCEPTS / "one-picture.md"
NAMES = ["dataflow", "families", "layer"]
SVG = "{http://www.w3.org/2000/svg}"
NAMESPACE = 'xmlns="http://www.w3.org/2000/svg"'
FORBIDDEN = {"script", "image", "foreignObject", "style", "a", "use", "font", "font-face"}
# the parts each diagram names, and the concept page that explains each (which must use the
# same name, and which the page must link)
PARTS = {
    "layer": {
        "LayerNorm": "norms-residuals.md",
        "multi-head attention": "multi-head.md",
        "FeedForward": "norms-residuals.md",
    },
    "families": {
        "causal": "attention.md",
        "self-attention": "attention.md",
        "cross-attention": "multi-head.md",
        "positions": "positional.md",
        "final norm": "norms-residuals.md",
        "unembedding": "families.md",
        "masked-LM head": "families.md",
    },
    "dataflow": {
        "ids": "tokenization.md",
        "embedding": "tokenization.md",
        "positions": "positional.md",
        "block": "norms-residuals.md",
        "final norm": "norms-residuals.md",
        "unembedding": "families.md",
    },
}
# the letters a shape may use: the sizes of docs/concepts/notation.md (and the config's
# n_classes)
SIZES = {"B", "T", "S", "C", "N_V", "n_classes"}


def squeezed(text: str) -> str:
    """Lower case, letters and digits only: "Multi-head attention" ~ "MultiHeadAttention"."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def words(root: ET.Element) -> str:
    """The diagram's text, each <text> element's pieces joined, one space between elements."""
    return " ".join(" ".join("".join(t.itertext()).split()) for t in root.iter(f"{SVG}text"))


def luminance(colour: str) -> float:
    """The relative luminance of "#rrggbb" (WCAG 2)."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_script_writes_the_committed_diagrams(tmp_path):
    written = load_script("diagrams").main(["--out", str(tmp_path)])
    assert sorted(p.stem for p in written) == NAMES
    assert sorted(p.stem for p in FOLDER.glob("*")) == NAMES, "a diagram no script writes"
    for path in written:
        committed = (FOLDER / path.name).read_text(encoding="utf-8")
        assert path.read_text(encoding="utf-8") == committed, (
            f"{path.name} differs from what docs/scripts/diagrams.py writes: run it"
        )


@pytest.mark.parametrize("name", NAMES)
def test_the_diagram_is_accessible_svg_that_scales_and_fetches_nothing(name):
    text = (FOLDER / f"{name}.svg").read_text(encoding="utf-8")
    root = ET.fromstring(text)  # well-formed XML, or ParseError
    assert root.tag == f"{SVG}svg"
    x, y, width, height = (float(v) for v in root.get("viewBox").split())
    assert (x, y) == (0, 0) and 650 <= width <= 720 and 0 < height < 900
    assert root.get("width") == f"{width:.0f}"  # the theme scales it down: max-width 100%
    title, desc = root[0], root[1]
    assert title.tag == f"{SVG}title" and len(title.text) > 20
    assert desc.tag == f"{SVG}desc" and len(desc.text) > 200
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    elements = list(root.iter())
    assert not {e.tag.removeprefix(SVG) for e in elements} & FORBIDDEN
    for e in elements:
        for attribute, value in e.attrib.items():
            assert not attribute.startswith("on") and "href" not in attribute, (name, attribute)
            assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", value))
    assert "://" not in text.replace(NAMESPACE, "") and "@" not in text
    # fonts: a list that ends in a generic family (the system's fonts, nothing fetched)
    assert root.get("font-family").split(",")[-1].strip() == "sans-serif"
    fonts = {e.get("font-family") for e in elements if e.get("font-family")}
    assert all(f.split(",")[-1].strip() in ("sans-serif", "monospace") for f in fonts)
    # dark text on light boxes on white: the text at least 4.5:1 against white (WCAG AA)
    texts = list(root.iter(f"{SVG}text"))
    assert len(texts) >= 10
    assert all(1.05 / (luminance(t.get("fill")) + 0.05) >= 4.5 for t in texts)
    boxes = [r for r in root.iter(f"{SVG}rect") if r.get("rx")]
    assert boxes and all(
        luminance(r.get("fill")) > 0.75 for r in boxes if r.get("fill") != "none"
    )  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_the_page_shows_the_diagram_and_links_the_page_of_each_part(name):
    page = PAGE.read_text(encoding="utf-8")
    assert re.search(rf"!\[[^\]]{{20,}}\]\(\.\./images/diagrams/{name}\.svg\)", page), name
    said = " ".join(words(ET.parse(FOLDER / f"{name}.svg").getroot()).split())
    for part, explained in PARTS[name].items():
        assert part in said, f"{name}.svg does not name {part!r}"
        assert squeezed(part) in squeezed((CONCEPTS / explained).read_text(encoding="utf-8")), (
            f"{explained} does not call it {part!r}"
        )
        assert f"]({explained})" in page, f"one-picture.md does not link {explained}"
    shapes = re.findall(r"\((B, [^()]*)\)", said)
    assert "B, T, C" in shapes and all(set(s.split(", ")) <= SIZES for s in shapes), shapes


def test_the_markup_renders_as_tspans():
    diagrams = load_script("diagrams")
    assert diagrams.spans("plain & <odd>", 13) == "plain &amp; &lt;odd&gt;"
    assert diagrams.spans("x_{n}^{(0)} = `(B, T)`", 10) == (
        'x<tspan dy="3" font-size="8">n</tspan><tspan dy="-7" font-size="8">(0)</tspan>'
        f'<tspan dy="4"> = </tspan><tspan font-family="{diagrams.MONO}" font-size="9">'
        "(B, T)</tspan>"
    )


# Each <text>'s box as the browser lays it out in its fonts, each labelled box's and each mask
# cell's (the background and the dashed frames left out).
MEASURE = """() => {
  const svg = document.documentElement;
  const box = e => { const b = e.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; };
  const rects = [...svg.querySelectorAll('rect')].filter(r => r.getAttribute('fill') !== 'none');
  return {
    width: svg.viewBox.baseVal.width, height: svg.viewBox.baseVal.height,
    boxes: rects.filter(r => r.getAttribute('rx')).map(box),
    cells: rects.filter(r => !r.getAttribute('rx') && r.getAttribute('width') < 20).map(box),
    texts: [...svg.querySelectorAll('text')].map(t => ({...box(t), text: t.textContent})),
  };
}"""


def overlap(a: dict, b: dict, margin: float = 1.0) -> bool:
    """Do the boxes a and b share more than ``margin`` across and down?"""
    across = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    down = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return across > margin and down > margin


def inside(a: dict, b: dict, margin: float = 2.0) -> bool:
    """Does the box a lie inside b, ``margin`` from its left and right sides?"""
    return (b["x"] + margin <= a["x"] and a["x"] + a["w"] <= b["x"] + b["w"] - margin
            and b["y"] <= a["y"] and a["y"] + a["h"] <= b["y"] + b["h"])  # fmt: skip


def holds(b: dict, x: float, y: float) -> bool:
    return b["x"] <= x <= b["x"] + b["w"] and b["y"] <= y <= b["y"] + b["h"]


@pytest.mark.parametrize("name", NAMES)
def test_the_text_fits_its_boxes_in_a_browser(browser, name):
    """Drawn by the system's Chromium in its own fonts: each label lies inside its box, no two
    pieces of text overlap, a text outside the boxes touches none of them or of the mask
    cells, and everything lies inside the picture."""
    page = browser.new_page()
    try:
        page.goto((FOLDER / f"{name}.svg").as_uri())
        seen = page.evaluate(MEASURE)
    finally:
        page.close()
    whole = {"x": 0, "y": 0, "w": seen["width"], "h": seen["height"]}
    faults = []
    for i, t in enumerate(seen["texts"]):
        x, y = t["x"] + t["w"] / 2, t["y"] + t["h"] / 2
        home = [b for b in seen["boxes"] if holds(b, x, y)]
        if home and not inside(t, home[0]):
            faults.append(f"{t['text']!r} spills out of its box")
        if not home and any(overlap(t, b) for b in seen["boxes"] + seen["cells"]):
            faults.append(f"{t['text']!r} runs into a box")
        faults += [f"{t['text']!r} overlaps {u['text']!r}"
                   for u in seen["texts"][i + 1 :] if overlap(t, u)]  # fmt: skip
        if not inside(t, whole, margin=0):
            faults.append(f"{t['text']!r} lies outside the picture")
    assert len(seen["texts"]) >= 10 and faults == [], "\n".join(faults)
