"""The run lock: one writer per run directory; a killed run's lock is recovered."""

import json
import os
import socket
import subprocess
import sys

import pytest
import torch

from glassformer import DecoderLM, preset
from glassformer.data import load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer
from glassformer.training.lock import LOCK_FILE, RunLock, StaleLockWarning
from glassformer.training.state import latest_checkpoint

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())


def trainer(run_dir, steps=2):
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1))
    cfg = TrainConfig(task="lm", steps=steps, batch_size=2, save_every=2, log_every=1)
    return Trainer(model, TOK, TEXT, None, cfg, run_dir, progress=False)


@pytest.fixture
def live_pid():
    """A process that is running for the length of the test."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def dead_pid():
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_lock(run_dir, pid, host=None):
    run_dir.mkdir(parents=True, exist_ok=True)
    holder = {"pid": pid, "host": host or socket.gethostname()}
    (run_dir / LOCK_FILE).write_text(json.dumps(holder))


def test_fit_holds_the_lock_while_training_and_releases_it(tmp_path):
    run = tmp_path / "run"
    t = trainer(run)
    seen = []
    step = t.train_step

    def spy():
        seen.append(json.loads((run / LOCK_FILE).read_text()))
        return step()

    t.train_step = spy
    t.fit()
    assert seen == [{"pid": os.getpid(), "host": socket.gethostname()}] * 2
    assert not (run / LOCK_FILE).exists()
    assert sorted(p.name for p in run.iterdir()) == ["checkpoints", "metrics.jsonl"]


def test_lock_is_released_when_fit_fails(tmp_path):
    t = trainer(tmp_path / "run")
    t.train_step = lambda: (_ for _ in ()).throw(RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        t.fit()
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_second_run_into_the_same_folder_is_refused(tmp_path, live_pid):
    run = tmp_path / "run"
    write_lock(run, live_pid)
    with pytest.raises(ValueError, match=f"{run}.* in use by process {live_pid}"):
        trainer(run).fit()
    assert (run / LOCK_FILE).exists()  # the other run's lock is untouched
    assert not (run / "metrics.jsonl").exists()  # and nothing of it was overwritten
    with pytest.raises(ValueError, match=str(live_pid)):
        RunLock(run).check()


def test_nested_lock_in_the_same_process_is_refused(tmp_path):
    with RunLock(tmp_path), pytest.raises(ValueError, match=f"in use by process {os.getpid()}"):
        RunLock(tmp_path).acquire()
    assert not (tmp_path / LOCK_FILE).exists()


def test_lock_from_another_host_is_respected(tmp_path, dead_pid):
    write_lock(tmp_path, dead_pid, host="elsewhere.example")
    with pytest.raises(ValueError, match="host 'elsewhere.example'.*delete the lock file"):
        RunLock(tmp_path).acquire()


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", '{"pid": "7"}'])
def test_unreadable_lock_is_replaced_with_a_note(tmp_path, content):
    (tmp_path / LOCK_FILE).write_text(content)
    with pytest.warns(StaleLockWarning, match="unreadable lock"), RunLock(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_stale_lock_of_a_killed_run_is_recovered_on_resume(tmp_path, dead_pid):
    run = tmp_path / "run"
    trainer(run).fit()
    write_lock(run, dead_pid)  # as a SIGKILL leaves it
    partial = run / "checkpoints" / ".step-000004.abc123"
    partial.mkdir()  # a checkpoint write the kill interrupted
    (partial / "model.safetensors").write_bytes(b"\0" * 10)
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "loss": 2.5, "lr"')  # a metrics line cut short by the kill
    again = trainer(run, steps=4)
    with pytest.warns(StaleLockWarning, match=f"left by process {dead_pid}"):
        again.fit(resume=True)
    assert again.step == 4 and latest_checkpoint(run).name == "step-000004"
    assert not partial.exists() and not (run / LOCK_FILE).exists()
    steps = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]


def test_fit_trains_under_the_callers_lock_and_leaves_it_held(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    t = trainer(run)
    with RunLock(run) as lock:
        t.fit(lock=lock)
        assert lock.held and json.loads((run / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert not (run / LOCK_FILE).exists() and t.step == 2
    with pytest.raises(ValueError, match="not a held lock"):
        trainer(run).fit(lock=RunLock(run))
