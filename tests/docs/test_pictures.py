"""The Concepts pages' pictures: docs/scripts/pictures.py draws every one of them (here with a
few training steps, into a temporary folder), and every picture a page shows is committed."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONCEPTS = ROOT / "docs" / "concepts"
IMAGES = ROOT / "docs" / "images" / "concepts"
PAGES = ["attention", "multi-head", "norms-residuals", "positional", "families",
         "tokenization", "training", "generation", "graphs", "circuits", "road-to-qk"]  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n"


def load_script():
    spec = importlib.util.spec_from_file_location("pictures", ROOT / "docs/scripts/pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shown(page: str) -> list[str]:
    """The file names of the concept pictures ``page`` embeds."""
    text = (CONCEPTS / f"{page}.md").read_text(encoding="utf-8")
    return re.findall(r"!\[[^\]]+\]\(\.\./images/concepts/([\w.-]+\.png)\)", text)


def test_script_draws_every_picture(tmp_path):
    pytest.importorskip("matplotlib")  # an optional dependency (the plot, docs and dev extras)
    pictures = load_script()
    assert list(pictures.PICTURES) == PAGES
    written = pictures.main(["--out", str(tmp_path), "--steps", "3"])
    for path in written:
        data = Path(path).read_bytes()
        assert Path(path).parent == tmp_path and data.startswith(PNG) and len(data) > 1000
    assert sorted(p.name for p in written) == sorted(n for page in PAGES for n in shown(page))


@pytest.mark.parametrize("page", PAGES)
def test_page_pictures_are_committed(page):
    names = shown(page)
    assert names, f"docs/concepts/{page}.md shows no picture"
    for name in names:
        path = IMAGES / name
        assert path.is_file(), f"{path} is missing: run python docs/scripts/pictures.py"
        assert path.read_bytes().startswith(PNG) and path.stat().st_size < 150_000
