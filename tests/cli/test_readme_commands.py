"""Every ``glassformer eval/generate/predict/inspect/trace`` command in README.md and every
``glassformer explore ... --export`` runs as written (exit 0, no error), against tiny runs
trained under the README's run names. (``explore`` without ``--export`` serves until stopped:
tests/explore/test_server.py starts it and reads its page.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .conftest import one_thread, run_cli

README = Path(__file__).parents[2] / "README.md"
COMMAND = re.compile(r"glassformer (?:eval|generate|predict|inspect|trace|explore) [^`\n]*")
FOUND = (c.split(" #")[0].strip() for c in COMMAND.findall(README.read_text(encoding="utf-8")))
SERVES = re.compile(r"glassformer explore (?!.*--export)")
# "generate ... | head": a placeholder
COMMANDS = sorted({c for c in FOUND if "..." not in c and not SERVES.match(c)})
RUNS = {
    "shakespeare-char": ["--data", "shakespeare"],
    "reverse-seq2seq-char": ["--data", "reverse", "--set", "data.num_examples=64"],
    "is_sorted-classify-char": ["--data", "is_sorted", "--set", "data.num_examples=64"],
    "shakespeare-mlm-char": ["--task", "mlm", "--data", "shakespeare"],
    "induction": ["--data", "induction", "--set", "data.num_examples=64"],
}
SMALL = [
    "--steps", "1", "--set", "model.d_model=32", "--set", "model.n_layer=2",
    "--set", "model.n_head=4", "--set", "model.max_len=32", "--set", "train.batch_size=4",
    "--set", "train.warmup=1", "--set", "train.eval_batches=1",
]  # fmt: skip


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory) -> Path:
    """A folder holding runs/<name> for every run the README's commands name."""
    root = tmp_path_factory.mktemp("readme")
    for name, argv in RUNS.items():
        with one_thread():
            result = run_cli("train", *argv, *SMALL, "--out", root / "runs" / name)
        assert result.code == 0, (name, result.err)
    return root


def test_the_readme_names_only_these_runs():
    assert len(COMMANDS) >= 8
    named = {m for c in COMMANDS for m in re.findall(r"--checkpoint runs/(\S+)", c)}
    assert named == set(RUNS)


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_as_written(readme_runs, monkeypatch, command):
    monkeypatch.chdir(readme_runs)
    with one_thread():
        result = run_cli(*shlex.split(command)[1:])
    assert result.code == 0, result.err
    assert result.err == "" and result.out
