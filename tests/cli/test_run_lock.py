"""The command line and the run lock: a second run into a busy folder is one line, exit 2,
and writes nothing (the lock is taken before run.json is written, and held until the last
file); a stale lock is replaced with a note."""

import json
import os
import socket
import subprocess
import sys

import pytest

from glassformer.training.lock import LOCK_FILE, RunLock


@pytest.fixture
def live_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def write_lock(run_dir, pid):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))


def test_cli_refuses_a_locked_run_in_one_line(cli, lm_files, tmp_path, live_pid):
    out = tmp_path / "run"
    args = ["train", "--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY]
    write_lock(out, live_pid)
    (out / "run.json").write_text('{"written by": "the running run"}')
    cli.assert_user_error(cli.run(*args), str(out), f"process {live_pid}")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, "run.json"]
    assert (out / "run.json").read_text() == '{"written by": "the running run"}'
    write_lock(out, 0)  # pid 0 is never a run: stale
    result = cli.run(*args)
    assert result.code == 0, result.err
    assert "glassformer: note: replacing a stale lock" in result.err
    assert not (out / LOCK_FILE).exists()


def test_two_runs_started_together_leave_the_first_ones_run_json(
    cli, lm_files, tmp_path, monkeypatch
):
    """Two runs start on one --out at the same moment; the first takes the lock just before
    the second would (the race made deterministic: the first run's lock is taken in this
    process as the second reaches for it). The second is refused naming the holder, and the
    first run's run.json is unchanged."""
    out = tmp_path / "run"
    out.mkdir()
    first = b'{"written by": "the first run, holding the lock"}'
    (out / "run.json").write_bytes(first)
    rival = RunLock(out)
    acquire, check = RunLock.acquire, RunLock.check

    def rival_takes_it():
        if not rival.held:
            acquire(rival)

    def late_check(lock):  # the rival takes the lock right after any look at it
        check(lock)
        rival_takes_it()

    def late_acquire(lock):
        if lock is not rival:
            rival_takes_it()
        acquire(lock)

    monkeypatch.setattr(RunLock, "check", late_check)
    monkeypatch.setattr(RunLock, "acquire", late_acquire)
    try:
        args = ["--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY]
        result = cli.run("train", *args)
        assert rival.held
    finally:
        rival.release()
    cli.assert_user_error(result, str(out), f"in use by process {os.getpid()} on this host")
    assert (out / "run.json").read_bytes() == first
    assert sorted(p.name for p in out.iterdir()) == ["run.json"]


def test_the_lock_is_held_from_run_json_to_the_last_file(cli, lm_files, tmp_path, monkeypatch):
    """run.json, the checkpoints, metrics.jsonl, loss.png and the TensorBoard logs are all
    written while this run holds the lock."""
    import glassformer.runs.run as run_module

    out = tmp_path / "run"
    holder = {"pid": os.getpid(), "host": socket.gethostname()}
    seen = []

    def spy(module, name, write):
        def wrapped(*args, **kwargs):
            seen.append((name, json.loads((out / LOCK_FILE).read_text()) == holder))
            return write(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    for name in ("write_run", "write_loss_plot", "write_tensorboard"):
        module = run_module  # runs/run.py writes all three while it holds the lock
        spy(module, name, getattr(module, name))
    result = cli.run("train", "--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY)
    assert result.code == 0, result.err
    assert seen == [("write_run", True), ("write_loss_plot", True), ("write_tensorboard", True)]
    assert not (out / LOCK_FILE).exists()
