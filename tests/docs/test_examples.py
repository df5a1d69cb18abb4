"""Every ```python block of the pages that give no shell command runs as written, each on its
own in a fresh namespace and an empty folder, so the examples cannot rot. The pages that give
commands (the README, the tutorials, ...) are walked as a whole, their Python blocks in page
order after the commands before them: tests/docs/test_walk.py.

What a Concepts page's block prints, the page shows under it (docs/scripts/outputs.py writes
the file it includes): here the block's output must equal that file, its words exactly and its
numbers within 5% or two units of their last printed digit. Float rounding differs between CPUs
(AMD or Intel, with AVX-512 or without), and a few hundred training steps carry that difference
into the printed digits: a 600-step run of "The road to Q and K" ends at validation loss 1.152
on one machine and 1.194 on another."""

import re
import shutil
from pathlib import Path

import pytest

from .conftest import PAGES, ROOT, load_script, name, steps, walked

BLOCKS = [
    (name(page), step.line, step.text)
    for page in PAGES
    if not walked(page)
    for step in steps(page)
    if step.kind == "python"
]

OUTPUTS = load_script("outputs")


@pytest.mark.parametrize(("page", "line", "code"), BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_example_runs(page, line, code, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    if "road_to_qk import compare" in code:
        trained_once(request.getfixturevalue("road_to_qk_runs"), monkeypatch)
    printed = OUTPUTS.run_python(code, f"{page} line {line}")
    block = next(b for b in OUTPUTS.blocks(ROOT / page) if b.line == line)
    path = OUTPUTS.shown(block)
    if printed and page.startswith("docs/concepts/"):
        assert path, f"{page} line {line} prints: show it under the block, {OUTPUTS.include(block)}"
    if path:
        assert path == block.output.relative_to(ROOT).as_posix(), (path, OUTPUTS.include(block))
        assert (ROOT / path).is_file(), f"{path} is missing: run python docs/scripts/outputs.py"
        assert same_up_to_rounding(printed, (ROOT / path).read_text(encoding="utf-8")), (
            f"{page} line {line} prints other than {path} shows: "
            f"run python docs/scripts/outputs.py\n--- printed\n{printed}"
        )


def trained_once(road_to_qk_runs, monkeypatch) -> None:
    """``compare("runs")`` of glassformer.examples.road_to_qk gives the runs and results that
    the suite trains once (tests/conftest.py, also read by tests/examples/test_road_to_qk.py):
    the same call, seeded by the config, so the same numbers; the runs are copied to the
    block's ``runs``. Any other call trains as usual."""
    from glassformer.examples import road_to_qk

    shared, results = road_to_qk_runs
    train = road_to_qk.compare

    def compare(out, **settings):
        if settings or Path(out) != Path("runs"):
            return train(out, **settings)
        shutil.copytree(shared / "runs", out)
        return results

    monkeypatch.setattr(road_to_qk, "compare", compare)


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def same_up_to_rounding(printed: str, shown: str) -> bool:
    """The same words, and each number printed with the same decimals, within 5% of the shown
    one or (a number with decimals) two units of its last digit."""
    if NUMBER.split(printed) != NUMBER.split(shown):
        return False
    for a, b in zip(NUMBER.findall(printed), NUMBER.findall(shown), strict=True):
        decimals = len(b.partition(".")[2])
        if len(a.partition(".")[2]) != decimals:
            return False
        units = 2 * 10.0**-decimals if decimals else 0.0
        if abs(float(a) - float(b)) > max(units, 0.05 * abs(float(b))) + 1e-12:
            return False
    return True


def test_rounding_is_all_that_may_differ():
    shown = "val loss 1.152, accuracy 0.814 (weight 0.54)"
    assert same_up_to_rounding("val loss 1.194, accuracy 0.791 (weight 0.53)", shown)
    assert not same_up_to_rounding("val loss 1.352, accuracy 0.814 (weight 0.54)", shown)
    assert not same_up_to_rounding("val loss 1.152, accuracy 0.814 (weight 0.54) !", shown)
    assert not same_up_to_rounding("val loss 1.15, accuracy 0.814 (weight 0.54)", shown)
    assert not same_up_to_rounding("layer 3", "layer 2")


def test_the_docs_hold_examples():
    pages = {page for page, _, _ in BLOCKS}
    assert len(pages) >= 10, sorted(pages)


def test_every_python_block_runs_somewhere():
    """A page's Python blocks run here, or in the walk of the page (test_walk.py)."""
    for page in PAGES:
        blocks = [s for s in steps(page) if s.kind == "python"]
        here = [b for b in BLOCKS if b[0] == name(page)]
        assert walked(page) or len(here) == len(blocks), name(page)
