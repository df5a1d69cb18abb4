"""Every ```python block of README.md and of the documentation (docs/**/*.md) runs as written,
each on its own in a fresh namespace and an empty folder, so the examples cannot rot.

A block whose first line is ``# needs runs/NAME: glassformer train ...`` uses a run that the page
trains with a long command; the test trains a small stand-in under the same name first (a few
steps, small data), so the block runs in seconds and its code, not its printed figures, is what
is checked.
"""

import re
from pathlib import Path

import pytest

from glassformer.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
BLOCKS = [
    (page.relative_to(ROOT).as_posix(), i, code)
    for page in PAGES
    for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")))
]
NEEDS = re.compile(r"# needs runs/(\S+): glassformer (train(?: .*)?)")
SMALL = [
    "--steps", "2", "--set", "train.eval_every=2", "--set", "train.save_every=2",
    "--set", "train.eval_batches=1", "--set", "sample.max_new_tokens=0",
]  # fmt: skip
FEW = ["--set", "data.num_examples=64"]  # the generated tasks; a corpus has a fixed size


def train_stand_in(first_line: str, root: Path) -> None:
    match = NEEDS.fullmatch(first_line.strip())
    assert match, f"expected '# needs runs/NAME: glassformer train ...', got {first_line}"
    name, command = match.groups()
    corpus = command == "train" or "shakespeare" in command
    argv = [*command.split(), *SMALL, *([] if corpus else FEW), "--out", str(root / "runs" / name)]
    code = main(argv)
    assert code == 0, f"training the stand-in for runs/{name} failed"


@pytest.mark.parametrize(("page", "index", "code"), BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_example_runs(page, index, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first_line = code.partition("\n")[0]
    if first_line.startswith("# needs"):
        train_stand_in(first_line, tmp_path)
    exec(compile(code, f"{page} block {index}", "exec"), {"__name__": "__example__"})


def test_the_readme_and_the_docs_hold_examples():
    pages = {page for page, _, _ in BLOCKS}
    assert "README.md" in pages
    assert len(pages) >= 10, sorted(pages)


def test_a_needs_line_names_a_train_command():
    marked = [code.partition("\n")[0] for _, _, code in BLOCKS if code.startswith("# needs")]
    assert marked, "the worked examples that need a trained run are marked"
    assert all(NEEDS.fullmatch(line.strip()) for line in marked), marked
