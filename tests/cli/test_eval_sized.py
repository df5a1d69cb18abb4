"""``glassformer eval`` on a run of a built-in task: progress while it runs, a validation part
sized for evaluation, ``--limit N``, and its figures printed when eval.json cannot be written."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re

import pytest

from glassformer.cli import main
from glassformer.data import load_dataset
from glassformer.runs.datasets import load_splits, validation_options
from glassformer.runs.plan import make_plan
from glassformer.runs.settings import load_config

ARGS = ["--batch-size", "8"]


@pytest.fixture(scope="module")
def run(cli, tmp_path_factory):
    """A tiny seq2seq run on reverse: 3,000 training examples, 2 steps."""
    out = tmp_path_factory.mktemp("eval-sized") / "reverse"
    result = cli.run(
        "train", "--data", "reverse", "--set", "data.num_examples=3000",
        "--set", "data.max_length=5", "--set", "train.eval_generate=8", "--steps", "2",
        *cli.TINY, "--out", out,
    )  # fmt: skip
    assert result.code == 0, result.err
    # the validation part is sized alone
    assert "3000 training examples, 2000 validation examples" in result.out
    return out


def report(path):
    return json.loads(path.read_text())


# (b) a validation part sized for evaluation ------------------------------------------------
def test_the_validation_part_of_a_builtin_task_holds_at_most_2000_examples():
    assert len(load_dataset("reverse", "validation")) == 2000  # the default size
    for name, size in [("reverse", 50_000), ("addition", 50_000), ("is_sorted", 20_000),
                       ("induction", 32_000)]:  # fmt: skip
        plan = make_plan(load_config(name))
        assert plan.data_options["num_examples"] == size
        assert validation_options(plan) == {**plan.data_options, "num_examples": 2000}
    train, validation = load_splits(plan)  # induction's 32,000 / 2,000
    assert (len(train), len(validation)) == (32_000, 2000)
    # as many as the training part when that is smaller: the first ones of the same draw
    small = make_plan({"run": {"data": "sort"}, "data": {"num_examples": 300}})
    train, validation = load_splits(small)
    assert (len(train), len(validation)) == (300, 300)
    assert validation.examples == load_dataset("sort", "validation").examples[:300]


def test_eval_reads_the_runs_validation_part_as_training_did(cli, run, tmp_path):
    result = cli.run("eval", "--checkpoint", run, "--limit", "16", *ARGS, "--json",
                     tmp_path / "m.json")  # fmt: skip
    assert result.code == 0, result.err
    assert report(tmp_path / "m.json")["examples_in_split"] == 2000
    # the trainer's evaluation (eval_batches=2 of batch_size 8): the same 16 examples
    (logged,) = [r for r in cli.metrics(run) if "val_loss" in r]
    assert report(tmp_path / "m.json")["metrics"]["loss"] == pytest.approx(logged["val_loss"])


# (c) --limit N ----------------------------------------------------------------------------
def test_limit_evaluates_the_first_n_examples_and_says_so(cli, run, tmp_path):
    limited, batches = tmp_path / "limited.json", tmp_path / "batches.json"
    result = cli.run("eval", "--checkpoint", run, "--limit", "20", *ARGS, "--json", limited)
    assert result.code == 0, result.err
    assert "(validation, the first 20 of 2000 examples):" in result.out
    got = report(limited)
    assert (got["examples"], got["examples_in_split"]) == (20, 2000)
    # the same 20 examples by hand: a data file of them, evaluated whole
    first = load_dataset("reverse", "validation", num_examples=20, max_length=5).examples
    data = tmp_path / "first.tsv"
    data.write_text("".join(f"{a}\t{b}\n" for a, b in first))
    result = cli.run("eval", "--checkpoint", run, "--data", data, *ARGS, "--json", batches)
    assert result.code == 0, result.err
    assert "(validation, 20 examples):" in result.out
    assert got["metrics"] == pytest.approx(report(batches)["metrics"], rel=1e-6)
    # with --batches the smaller count wins; a limit past the end evaluates all
    result = cli.run("eval", "--checkpoint", run, "--limit", "20", "--batches", "1", *ARGS,
                     "--json", limited)  # fmt: skip
    assert report(limited)["examples"] == 8
    result = cli.run("eval", "--checkpoint", run, "--data", data, "--limit", "500", *ARGS,
                     "--json", limited)  # fmt: skip
    assert "(validation, 20 examples):" in result.out and report(limited)["examples"] == 20


@pytest.mark.parametrize(
    ("value", "words"),
    [("0", "0 must be >= 1"), ("-3", "-3 must be >= 1"), ("x", "'x' is not an integer"),
     ("1.5", "'1.5' is not an integer"), ("", "'' is not an integer")],
)  # fmt: skip
def test_a_bad_limit_is_one_line(cli, run, value, words):
    result = cli.run("eval", "--checkpoint", run, f"--limit={value}")
    cli.assert_user_error(result, "argument --limit", words)
    assert not (run / "eval.json").exists()


# (a) progress -----------------------------------------------------------------------------
PROGRESS = re.compile(r"(scoring|greedy decoding): \d+/\d+ examples ")
LINE = re.compile(r"(scoring|greedy decoding): (\d+)/40 examples \((\d+)%\), (done in \S+|.+ left)")


def test_piped_eval_prints_a_line_at_each_tenth_of_each_phase(cli, run, tmp_path):
    result = cli.run("eval", "--checkpoint", run, "--limit", "40", *ARGS, "--json",
                     tmp_path / "m.json")  # fmt: skip
    assert result.code == 0, result.err
    lines = [LINE.fullmatch(line) for line in result.err.splitlines()]
    assert all(lines), result.err
    shown = [(m[1], int(m[2]), int(m[3])) for m in lines]
    steps = [(n, n * 100 // 40) for n in (8, 16, 24, 32, 40)]  # one batch of 8 is a fifth
    assert shown == [("scoring", *s) for s in steps] + [("greedy decoding", *s) for s in steps]
    assert lines[4][4].startswith("done in") and lines[3][4].endswith("left")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_eval_in_a_terminal_shows_a_bar(run, tmp_path):
    screen = Terminal()
    argv = ["eval", "--checkpoint", run, "--limit", "40", *ARGS, "--json", tmp_path / "m.json"]
    with contextlib.redirect_stderr(screen), contextlib.redirect_stdout(io.StringIO()):
        assert main([str(a) for a in argv]) == 0
    text = screen.getvalue()
    assert re.search(r"scoring: 100%.*40/40", text) and re.search(
        r"greedy decoding: 100%.*40/40", text
    )
    assert "(20%)" not in text  # no lines under a bar


# (d) a checkpoint folder that cannot be written --------------------------------------------
@pytest.fixture
def read_only(monkeypatch):
    """Make every file creation under the given folder fail as a read-only file system (or a
    folder without write permission) does; a test runs as root, where chmod would not do."""

    def make(folder, code=errno.EROFS):
        real = os.open

        def fake_open(path, flags, *args, **kwargs):
            inside = os.path.abspath(path).startswith(str(folder) + os.sep)
            if inside and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise OSError(code, os.strerror(code), str(path))
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", fake_open)

    return make


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_eval_of_a_read_only_run_prints_its_figures_and_a_note(cli, run, read_only, code):
    os.chmod(run, 0o555)
    try:
        read_only(run, code)
        result = cli.run("eval", "--checkpoint", run, "--limit", "8", *ARGS)
    finally:
        os.chmod(run, 0o755)
    assert result.code == 0, result.err
    assert "(validation, the first 8 of 2000 examples):" in result.out
    assert re.search(r"\n  exact_match     \S+\n  token_accuracy  \S+\n$", result.out)
    assert "wrote" not in result.out
    notes = [line for line in result.err.splitlines() if not PROGRESS.match(line)]
    assert notes == [
        f"glassformer: note: {run / 'eval.json'} was not written ({os.strerror(code)}); the "
        "metrics are above, and --json PATH writes them elsewhere"
    ]
    assert not (run / "eval.json").exists()
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".eval")) == []


def test_json_path_writes_the_metrics_elsewhere_and_a_named_one_must_be_writable(
    cli, run, read_only, tmp_path
):
    read_only(run)
    elsewhere = tmp_path / "out" / "metrics.json"
    result = cli.run("eval", "--checkpoint", run, "--limit", "8", *ARGS, "--json", elsewhere)
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith(f"wrote {elsewhere}")
    assert report(elsewhere)["examples"] == 8
    result = cli.run("eval", "--checkpoint", run, "--limit", "8", *ARGS, "--json",
                     run / "mine.json")  # fmt: skip
    # the folder passed the check before loading (os.access), then refused the write
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.splitlines()[-1] == (
        f"glassformer: error: --json {run / 'mine.json'}: not written (Read-only file system)"
    )
    assert not (run / "mine.json").exists()
