"""Every ``glassformer eval/generate/predict/inspect/trace`` command in README.md and in the
documentation (docs/**/*.md), and every
``glassformer explore ... --export`` runs as written (exit 0, no error), against tiny runs
trained under the run names the pages use. (``explore`` without ``--export`` serves until stopped:
tests/explore/test_server.py starts it and reads its page.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .conftest import one_thread, run_cli

ROOT = Path(__file__).parents[2]
PAGES = [  # the reference pages quote usage lines and messages, not commands to run
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts),
]
COMMAND = re.compile(r"glassformer (?:eval|generate|predict|inspect|trace|explore) [^`\n]*")
FOUND = (
    c.split(" #")[0].strip()
    for page in PAGES
    for c in COMMAND.findall(page.read_text(encoding="utf-8"))
)
SERVES = re.compile(r"glassformer explore (?!.*--export)")
# "generate ... | head": a placeholder
COMMANDS = sorted({c for c in FOUND if "..." not in c and not SERVES.match(c)})
RUNS = {
    "shakespeare-char": ["--data", "shakespeare"],
    "reverse-seq2seq-char": ["--data", "reverse", "--set", "data.num_examples=64"],
    "is_sorted-classify-char": ["--data", "is_sorted", "--set", "data.num_examples=64"],
    "shakespeare-mlm-char": ["--task", "mlm", "--data", "shakespeare"],
    "induction": ["--data", "induction", "--set", "data.num_examples=64"],
    "reviews": ["--data", "{root}/reviews.csv", "--tokenizer", "word"],  # tutorials/classifier
}
PROGRESS = re.compile(r"(scoring|greedy decoding): [\d,]+/[\d,]+ examples \(\d+%\), .+")
REVIEWS = "label,text\n" + "pos,plot was very clever\nneg,cast was very dull\n" * 10
SMALL = [
    "--steps", "1", "--set", "model.d_model=32", "--set", "model.n_layer=2",
    "--set", "model.n_head=4", "--set", "model.max_len=32", "--set", "train.batch_size=4",
    "--set", "train.warmup=1", "--set", "train.eval_batches=1",
]  # fmt: skip


@pytest.fixture(scope="module")
def doc_runs(tmp_path_factory) -> Path:
    """A folder holding runs/<name> for every run the pages' commands name."""
    root = tmp_path_factory.mktemp("docs")
    (root / "reviews.csv").write_text(REVIEWS, encoding="utf-8")
    for name, argv in RUNS.items():
        argv = [a.format(root=root) for a in argv]
        with one_thread():
            result = run_cli("train", *argv, *SMALL, "--out", root / "runs" / name)
        assert result.code == 0, (name, result.err)
    return root


def test_the_pages_name_only_these_runs():
    assert len(COMMANDS) >= 8
    named = {m for c in COMMANDS for m in re.findall(r"--checkpoint runs/(\S+)", c)}
    assert named == set(RUNS)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_runs_as_written(doc_runs, monkeypatch, command):
    monkeypatch.chdir(doc_runs)
    with one_thread():
        result = run_cli(*shlex.split(command)[1:])
    assert result.code == 0, result.err
    noise = [line for line in result.err.splitlines() if not PROGRESS.fullmatch(line)]
    assert noise == [] and result.out  # stderr: eval's progress lines only
