"""Kill tests: a real ``glassformer train`` process is killed with SIGKILL at seeded random
moments (one of them inside a checkpoint write) and resumed with ``--resume``. After every
kill (a) the newest checkpoint loads, (b) the resumed run ends with bitwise the parameters of
an uninterrupted run with the same seed, (c) only the steps since the newest checkpoint were
lost. The kills also leave a stale run lock and a half-written ``.step-*`` folder behind,
which the resume recovers and removes."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from glassformer import load_model
from glassformer.training.lock import LOCK_FILE
from glassformer.training.state import latest_checkpoint

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX"),
    pytest.mark.slow,  # real processes, started, killed and resumed: half a minute each
]

STEPS, SAVE_EVERY = 20, 2
SLOW_SAVE = Path(__file__).with_name("slow_save.py")
TINY = [
    "--set", "model.d_model=16", "--set", "model.n_layer=1", "--set", "model.n_head=2",
    "--set", "model.max_len=16", "--set", "train.batch_size=4", "--set", "train.warmup=2",
    "--set", "train.log_every=1", "--set", f"train.save_every={SAVE_EVERY}",
    "--set", "train.keep_last=3", "--set", "sample.max_new_tokens=0", "--seed", "5",
]  # fmt: skip
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def start(out: Path, argv: list, slow_save: bool = False) -> subprocess.Popen:
    entry = [str(SLOW_SAVE)] if slow_save else ["-m", "glassformer"]
    logs = out.parent / f"{out.name}.log"
    with open(logs, "a") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, *entry, "train", "--out", str(out), *map(str, argv)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=ENV,
        )


def wait_for(proc: subprocess.Popen, ready: Callable[[], bool], what: str) -> None:
    """Poll ``ready`` (every millisecond) until it holds; fail if the process ends first."""
    deadline = time.monotonic() + 60
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


def logged_steps(out: Path) -> list[int]:
    path = out / "metrics.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(x)["step"] for x in lines if x.endswith("}") and '"loss"' in x]


def step_of(path: Path | None) -> int:
    return 0 if path is None else int(path.name.rsplit("-", 1)[1])


def partial_writes(out: Path) -> list[Path]:
    root = out / "checkpoints"
    return sorted(root.glob(".step-*")) if root.is_dir() else []


def kill(proc: subprocess.Popen, out: Path) -> tuple[int, int]:
    """SIGKILL ``proc``; check the run folder as the kill left it; (newest checkpoint step,
    last logged step)."""
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    newest = latest_checkpoint(out)
    if newest is not None:  # (a) the newest complete checkpoint always loads
        model = load_model(newest)
        assert model.num_parameters() > 0
    saved, logged = step_of(newest), max(logged_steps(out), default=0)
    # (c) what the kill cost: the steps logged after the newest checkpoint, fewer than one
    # save interval (plus the step whose checkpoint was being written)
    assert 0 <= logged - saved <= SAVE_EVERY, (saved, logged)
    return saved, logged


def test_sigkill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("the cat sat on the mat; the dog lay on the log.\n" * 40)
    argv = ["--data", text, "--steps", STEPS, *TINY]
    whole = tmp_path / "whole"
    reference = start(whole, argv)

    rng = random.Random(10)
    out = tmp_path / "killed"
    seen_checkpoint = 0
    resumes: list[int] = []

    def resume(slow_save: bool = False) -> subprocess.Popen:
        return start(out, ["--resume"], slow_save)

    # 1. soon after a checkpoint, at a random moment (sometimes in the next write)
    proc = start(out, argv)
    first = rng.choice([2, 4, 6])
    wait_for(proc, lambda: step_of(latest_checkpoint(out)) >= first, f"checkpoint {first}")
    time.sleep(rng.uniform(0.0, 0.05))
    seen_checkpoint, _ = kill(proc, out)
    assert seen_checkpoint >= first
    assert (out / LOCK_FILE).exists()  # a killed run cannot release its lock

    # 2. inside a checkpoint write: a temporary .step-* folder is there, not yet renamed
    old = set(partial_writes(out))  # one the first kill may have left (the resume removes it)
    proc = resume(slow_save=True)
    resumes.append(seen_checkpoint)
    wait_for(proc, lambda: bool(set(partial_writes(out)) - old), "a checkpoint write")
    time.sleep(rng.uniform(0.0, 0.2))  # the write pauses 1 s half-way (slow_save.py)
    saved, logged = kill(proc, out)
    assert partial_writes(out), "the kill should have landed inside the write"
    assert saved >= seen_checkpoint and logged == saved + SAVE_EVERY
    seen_checkpoint = saved

    # 3. between two checkpoints, a random number of steps after resuming
    proc = resume()
    resumes.append(seen_checkpoint)
    # past the steps the last kill left in metrics.jsonl (the resume truncates them)
    target = seen_checkpoint + SAVE_EVERY + rng.randint(1, 3)
    wait_for(proc, lambda: max(logged_steps(out), default=0) >= target, f"step {target}")
    saved, logged = kill(proc, out)
    assert saved >= seen_checkpoint + SAVE_EVERY and logged >= target

    # 4. resume to the end
    proc = resume()
    resumes.append(saved)
    assert proc.wait(timeout=60) == 0, (tmp_path / "killed.log").read_text()
    assert reference.wait(timeout=60) == 0, (tmp_path / "whole.log").read_text()

    log = (tmp_path / "killed.log").read_text()
    # each resume started from the newest checkpoint the kill left
    assert [int(x) for x in re.findall(r"resuming at step (\d+) to", log)] == resumes
    assert log.count("glassformer: note: replacing a stale lock") == len(resumes)
    assert not partial_writes(out)  # the interrupted write was cleaned up on resume
    assert not (out / LOCK_FILE).exists() and not (whole / LOCK_FILE).exists()

    # (b) bitwise the parameters of the uninterrupted run
    final = f"checkpoints/step-{STEPS:06d}/model.safetensors"
    ours, theirs = load_file(out / final), load_file(whole / final)
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert torch.equal(ours[name], tensor), name
    # (c) each step logged once, with the loss of the uninterrupted run
    assert logged_steps(out) == list(range(1, STEPS + 1))
    assert losses(out) == losses(whole)


def losses(run: Path) -> list[tuple[int, float]]:
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in records if "loss" in r]


def test_an_sgd_run_killed_and_resumed_ends_as_an_uninterrupted_one(tmp_path):
    """SGD with momentum: the momentum buffers saved in the checkpoint carry the run on."""
    text = tmp_path / "train.txt"
    text.write_text("the cat sat on the mat; the dog lay on the log.\n" * 40)
    sgd = ["--set", "train.optimizer=sgd", "--set", "train.lr=0.1"]
    argv = ["--data", text, "--steps", STEPS, *TINY, *sgd]
    whole, out = tmp_path / "whole", tmp_path / "killed"
    reference = start(whole, argv)
    proc = start(out, argv)
    wait_for(proc, lambda: step_of(latest_checkpoint(out)) >= SAVE_EVERY, "a checkpoint")
    saved, _ = kill(proc, out)
    proc = start(out, ["--resume"])
    assert proc.wait(timeout=60) == 0, (tmp_path / "killed.log").read_text()
    assert reference.wait(timeout=60) == 0, (tmp_path / "whole.log").read_text()
    assert f"resuming at step {saved} to" in (tmp_path / "killed.log").read_text()
    final = f"checkpoints/step-{STEPS:06d}"
    for file in ("model.safetensors", "trainer.safetensors"):
        ours, theirs = load_file(out / final / file), load_file(whole / final / file)
        assert ours.keys() == theirs.keys()
        for name, tensor in theirs.items():
            assert torch.equal(ours[name], tensor), (file, name)
    momentum = [k for k in theirs if k.endswith("/momentum_buffer")]
    assert momentum and all(theirs[k].abs().sum() > 0 for k in momentum)
    assert losses(out) == losses(whole)
