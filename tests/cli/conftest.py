"""Shared helpers for the command-line tests (the ``cli`` fixture): run ``main(argv)``
in-process and capture its output; tiny trained runs of each task (trained once per session,
a few seconds in all)."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from glassformer.cli import main


@contextlib.contextmanager
def one_thread():
    """Tiny models train several times faster on one thread when the CPU is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


# A tiny model and a short run: seconds on a CPU.
TINY = [
    "--set", "model.d_model=32", "--set", "model.n_layer=1", "--set", "model.n_head=2",
    "--set", "model.max_len=16", "--set", "train.batch_size=8", "--set", "train.warmup=2",
    "--set", "train.lr=1e-2", "--set", "train.log_every=1", "--set", "train.eval_batches=2",
]  # fmt: skip
LM_TEXT = "the cat sat on the mat.\n" * 60


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*argv: str | Path) -> Result:
    """``glassformer argv...`` in this process; its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return Result(code, out.getvalue(), err.getvalue())


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def train_losses(run_dir: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in metrics(run_dir) if "loss" in r]


def assert_user_error(result: Result, *words: str) -> None:
    """Exit status 2 and one line on stderr, ``glassformer: error: ...`` naming ``words``."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("glassformer: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


class CLI:
    """The helpers, handed to tests by the ``cli`` fixture."""

    TINY = TINY
    run = staticmethod(run_cli)
    metrics = staticmethod(metrics)
    train_losses = staticmethod(train_losses)
    assert_user_error = staticmethod(assert_user_error)


@pytest.fixture(scope="session")
def cli() -> type[CLI]:
    return CLI


@pytest.fixture(scope="session")
def lm_files(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lm-data")
    (root / "train.txt").write_text(LM_TEXT)
    (root / "valid.txt").write_text("the mat sat on the cat.\n" * 8)
    return root / "train.txt", root / "valid.txt"


@pytest.fixture(scope="session")
def lm_run(tmp_path_factory, lm_files) -> tuple[Path, Result]:
    """A character-level LM on a user .txt file: 40 steps, validation every 10."""
    out = tmp_path_factory.mktemp("runs") / "lm"
    train, valid = lm_files
    with one_thread():
        result = run_cli(
        "train", "--data", train, "--val-data", valid, "--out", out, "--steps", "40", *TINY,
        "--set", "train.eval_every=10", "--set", "train.save_every=10",
            "--set", "sample.max_new_tokens=10", "--seed", "3",
        )  # fmt: skip
    assert result.code == 0, result.err
    return out, result


@pytest.fixture(scope="session")
def task_runs(tmp_path_factory) -> dict[str, Path]:
    """Tiny runs of mlm (a .txt file), seq2seq (reverse) and classify (is_sorted)."""
    root = tmp_path_factory.mktemp("task-runs")
    (root / "text.txt").write_text(LM_TEXT)
    common = [*TINY, "--steps", "20", "--set", "train.eval_every=10"]
    argv = {
        "mlm": ["--task", "mlm", "--data", root / "text.txt", "--val-data", root / "text.txt"],
        "seq2seq": [
            "--data", "reverse", "--set", "data.num_examples=200", "--set", "data.max_length=5",
            "--set", "train.eval_generate=16",
        ],
        "classify": [
            "--data", "is_sorted", "--set", "data.num_examples=200", "--set",
            "data.max_length=6", "--set", "model.pooling=mean",
        ],
    }  # fmt: skip
    runs = {}
    for task, args in argv.items():
        out = root / task
        with one_thread():
            result = run_cli("train", *args, *common, "--out", out)
        assert result.code == 0, (task, result.err)
        runs[task] = out
    return runs
