"""The README's Python examples run as written (each ```python block, in order).

A block whose first line is ``# needs runs/NAME: COMMAND`` uses a run the README trains with a
long command; the test trains a small stand-in under the same name first (a few steps, small
data), so the block runs in seconds and its code, not its printed figures, is what is checked.
"""

import re
from pathlib import Path

import pytest

from glassformer.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
NEEDS = re.compile(r"# needs runs/(\S+): glassformer (train .*)")
SMALL = [
    "--steps", "2", "--set", "data.num_examples=64", "--set", "train.eval_every=2",
    "--set", "train.save_every=2", "--set", "train.eval_batches=1",
    "--set", "sample.max_new_tokens=0",
]  # fmt: skip


def train_stand_in(first_line: str, root: Path) -> None:
    match = NEEDS.fullmatch(first_line.strip())
    assert match, f"expected '# needs runs/NAME: glassformer train ...', got {first_line}"
    name, command = match.groups()
    code = main([*command.split(), *SMALL, "--out", str(root / "runs" / name)])
    assert code == 0, f"training the stand-in for runs/{name} failed"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first_line = BLOCKS[index].partition("\n")[0]
    if first_line.startswith("# needs"):
        train_stand_in(first_line, tmp_path)
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})


def test_a_needs_line_names_a_train_command():
    marked = [b.partition("\n")[0] for b in BLOCKS if b.startswith("# needs")]
    assert marked, "the worked examples that need a trained run are marked"
    assert all(NEEDS.fullmatch(line.strip()) for line in marked), marked
