"""The command line and the run lock: a second run into a busy folder is one line, exit 2;
a stale lock is replaced with a note."""

import json
import socket
import subprocess
import sys

import pytest

from glassformer.training.lock import LOCK_FILE


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
    cli.assert_user_error(cli.run(*args), str(out), f"process {live_pid}")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # run.json not written
    write_lock(out, 0)  # pid 0 is never a run: stale
    result = cli.run(*args)
    assert result.code == 0, result.err
    assert "glassformer: note: replacing a stale lock" in result.err
    assert not (out / LOCK_FILE).exists()
