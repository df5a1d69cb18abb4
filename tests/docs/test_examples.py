"""Every ```python block of the pages that give no shell command, and are no notebook, runs as
written, each on its own in a fresh namespace and an empty folder, so the examples cannot rot.
The pages that give commands (the README, the tutorials, ...) are walked as a whole, their
Python blocks in page order after the commands before them: tests/docs/test_walk.py. The
Concepts pages are notebooks too (docs/scripts/notebooks.py): their blocks run there, each
page's in one kernel in page order, and print what the page shows: tests/docs/test_notebooks.py.

What a page's block prints and the page shows under it must equal that file, its words exactly
and its numbers within 5% or two units of their last printed digit (``same_up_to_rounding``,
which test_notebooks.py uses too). Float rounding differs between CPUs (AMD or Intel, with
AVX-512 or without), and a few hundred training steps carry that difference into the printed
digits: a 600-step run of "The road to Q and K" ends at validation loss 1.152 on one machine
and 1.194 on another.

Cost: the guide and reference pages' blocks, a few seconds in all.
"""

import re

import pytest

from .pages import PAGES, ROOT, load_script, name, steps, walked

OUTPUTS = load_script("outputs")
NOTEBOOKS = {name(page) for page in load_script("notebooks").pages()}  # run in test_notebooks.py
BLOCKS = [
    (name(page), step.line, step.text)
    for page in PAGES
    if not walked(page) and name(page) not in NOTEBOOKS
    for step in steps(page)
    if step.kind == "python"
]


@pytest.mark.parametrize(("page", "line", "code"), BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_example_runs(page, line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
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
    assert len(pages) >= 10 and len(NOTEBOOKS) >= 10, (sorted(pages), sorted(NOTEBOOKS))


def test_every_python_block_runs_somewhere():
    """A page's Python blocks run here, in the walk of the page (test_walk.py), or in its
    notebook (test_notebooks.py, test_tutorial_notebooks.py)."""
    for page in PAGES:
        blocks = [s for s in steps(page) if s.kind == "python"]
        here = [b for b in BLOCKS if b[0] == name(page)]
        elsewhere = walked(page) or name(page) in NOTEBOOKS
        assert elsewhere or len(here) == len(blocks), name(page)
