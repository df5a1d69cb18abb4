"""glassformer.cli.threads: PyTorch gets one thread per core that other work leaves free, when
train or eval runs as a command and the user has not chosen (OMP_NUM_THREADS)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys

import pytest

from glassformer.cli import main, threads

from .conftest import TINY, run_cli

MODULE = "glassformer.cli.evaluate"
SPIN = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"


def stat_lines(*cores: tuple[int, int]) -> str:
    """/proc/stat with the given (busy, idle) jiffies per core."""
    total = [sum(c) for c in zip(*cores, strict=True)]
    lines = [f"cpu  {total[0]} 0 0 {total[1]} 0 0 0 0 0 0"]
    lines += [f"cpu{i} {busy} 0 0 {idle} 0 0 0 0 0 0" for i, (busy, idle) in enumerate(cores)]
    return "\n".join([*lines, "intr 1 2 3", "ctxt 99"]) + "\n"


@pytest.fixture
def fake_stat(monkeypatch, tmp_path):
    """Make ``/proc/stat`` read as the successive texts given to the returned function."""
    texts: list[str] = []
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/stat":
            path = tmp_path / "stat"
            path.write_text(texts.pop(0), encoding="ascii")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(threads, "open", fake_open, raising=False)
    monkeypatch.setattr(threads.time, "sleep", lambda s: None)
    return texts.extend


def test_busy_cores_counts_the_share_of_each_core_that_was_not_idle(fake_stat):
    # core 0: 100 jiffies, all busy; core 1: 100 jiffies, 25 busy
    fake_stat([stat_lines((0, 0), (0, 0)), stat_lines((100, 0), (25, 75))])
    assert threads.busy_cores([0, 1]) == pytest.approx(1.25)
    fake_stat([stat_lines((0, 0), (0, 0)), stat_lines((100, 0), (25, 75))])
    assert threads.busy_cores([1]) == pytest.approx(0.25)  # only the cores of the affinity set


@pytest.mark.parametrize(
    ("after", "chosen"),
    [
        (((5, 95), (3, 97)), (2, 2, 0.08)),  # quiet: a thread per core
        (((100, 0), (4, 96)), (1, 2, 1.04)),  # one core busy with other work
        (((100, 0), (100, 0)), (1, 2, 2.0)),  # both busy: still one thread
    ],
)
def test_choose_threads_leaves_the_busy_cores(fake_stat, monkeypatch, after, chosen):
    for name in threads.CHOSEN_BY_USER:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "_affinity", lambda: [0, 1])
    fake_stat([stat_lines((0, 0), (0, 0)), stat_lines(*after)])
    assert threads.choose_threads() == pytest.approx(chosen)


def test_the_users_choice_and_an_unreadable_stat_change_nothing(fake_stat, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads.choose_threads() is None
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_affinity", lambda: [0, 7])  # a core /proc/stat does not list
    fake_stat([stat_lines((0, 0), (0, 0))])
    assert threads.choose_threads() is None


@pytest.mark.parametrize("command", ["train", "eval"])
def test_only_the_command_chooses_threads_not_a_python_caller(
    command, lm_files, lm_run, monkeypatch, tmp_path
):
    """main(argv) from Python keeps the process's threads; run as the command (argv None),
    train and eval look at the cores once their settings are checked."""
    module = importlib.import_module({"train": "glassformer.cli.train", "eval": MODULE}[command])
    calls = []
    monkeypatch.setattr(module, "use_free_cores", lambda: calls.append(command))
    train, valid = lm_files
    argv = {
        "train": ["train", "--data", train, "--val-data", valid, "--steps", "1", *TINY],
        "eval": ["eval", "--checkpoint", lm_run[0], "--batches", "1"],
    }[command]
    out = ["--out", tmp_path / "python"] if command == "train" else []
    assert run_cli(*argv, *out).code == 0
    assert calls == []
    out = ["--out", tmp_path / "command"] if command == "train" else []
    monkeypatch.setattr(sys, "argv", ["glassformer", *map(str, argv), *map(str, out)])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main() == 0
    assert calls == [command]
    monkeypatch.setattr(sys, "argv", ["glassformer", command, "--checkpoint", "no/such/run"])
    with contextlib.redirect_stderr(io.StringIO()):
        assert main() == 2  # a user mistake is told before the cores are looked at
    assert calls == [command]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux's CPU affinity")
def test_the_command_on_a_busy_core_runs_one_thread_and_says_so(tmp_path):
    """A real busy core: a process spinning on core 0, glassformer pinned to cores 0 and 1."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs 2 cores to leave one free")
    pair = cores[:2]
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{pair[0]}}})\n{SPIN}"]
    )
    probe = (
        "import os, sys, torch; os.sched_setaffinity(0, {int(c) for c in sys.argv[1:]})\n"
        "from glassformer.cli import threads\nthreads.use_free_cores()\n"
        "print(torch.get_num_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k not in threads.CHOSEN_BY_USER}
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe, *map(str, pair)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        spinner.kill()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "of 2 cores busy: PyTorch runs 1 thread (OMP_NUM_THREADS=N chooses)" in done.stderr
