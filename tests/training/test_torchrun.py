"""Data-parallel training under torchrun (gloo, 2 CPU processes) equals one process.
The worker runs start torchrun's launcher in the test's own process (``torchrun_here``), so
each start imports torch twice (the workers) instead of three times.

One optimizer step on a global batch of B split over 2 processes must give the parameters of
one process on the whole batch: each process's loss is a mean over its B/2 windows (all of
the same length here), and DDP / FSDP average the gradients.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from glassformer import load_model
from glassformer.models import EncoderDecoder

WORKER = Path(__file__).with_name("ddp_worker.py")
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(
    out: Path,
    strategy: str,
    steps: int,
    procs: int,
    resume=False,
    stop_at=None,
    optimizer="adamw",
    lora_rank=0,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    args = [str(WORKER), str(out), strategy, str(steps), "resume" if resume else "fresh"]
    args += [] if stop_at is None else [str(stop_at)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WORKER_OPTIMIZER": optimizer}
    env["WORKER_LORA_RANK"] = str(lora_rank)
    if procs > 1:
        torchrun_here(
            ["--nproc_per_node", str(procs), "--master_addr", "127.0.0.1",
             "--master_port", str(free_port()), *args], env,
        )  # fmt: skip
        return
    env = {k: v for k, v in env.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr[-8000:]


def torchrun_here(argv: list[str], env: dict[str, str]) -> None:
    """``torchrun ARGV`` with torchrun's own launcher (torch.distributed.run) run in this
    process, which has torch imported already: it starts the worker processes with ``env``
    and torchrun's variables, as the command does, and raises ChildFailedError (naming the
    failed rank; the workers' stderr is the test's) when one fails. The environment and the
    signal handlers the launcher sets (SIGTERM, SIGINT, SIGHUP, SIGQUIT) are restored after;
    a launch still running after 240 s gets a SIGTERM (the launcher's handler ends the
    workers and raises). The torchrun command itself is run as a command by
    test_glassformer_train_under_torchrun and test_a_locked_run_directory_stops_every_process."""
    from torch.distributed.run import parse_args
    from torch.distributed.run import run as launch

    signals = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT]
    handlers = {s: signal.getsignal(s) for s in signals}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    timeout = threading.Timer(240, os.kill, (os.getpid(), signal.SIGTERM))
    timeout.start()
    try:
        launch(parse_args(argv))
    finally:
        timeout.cancel()
        os.environ.clear()
        os.environ.update(saved)
        for s, handler in handlers.items():
            signal.signal(s, handler)


def params(out: Path, file: str = "model.safetensors") -> dict[str, torch.Tensor]:
    """The parameters in the newest checkpoint (gathered from the shards under FSDP), a LoRA
    run's adapters among them."""
    newest = sorted((out / "run" / "checkpoints").iterdir())[-1]
    return load_file(newest / file)


def losses(out: Path) -> list[float]:
    lines = (out / "run" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(x)["loss"] for x in lines if "loss" in json.loads(x)]


def assert_same(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=atol, rtol=0, msg=k)


@pytest.fixture(scope="module")
def six_steps(tmp_path_factory):
    """``six_steps(strategy, procs)``: the folder of a fresh 6-step run, made once per module
    and shared by the tests that compare against it (none writes into it). One process trains
    the model itself, unwrapped, whichever the strategy (distributed.wrap_model): both
    strategies compare against the same one-process run."""
    root = tmp_path_factory.mktemp("six-steps")

    def made(strategy: str, procs: int) -> Path:
        out = root / (f"{strategy}-{procs}" if procs > 1 else "one-process")
        if not out.exists():
            run(out, strategy, 6, procs=procs)
        return out

    return made


@pytest.fixture(scope="module")
def lora_one(tmp_path_factory) -> Path:
    """A fresh 6-step LoRA run in one process (the strategy plays no part in one process),
    shared by both strategies' LoRA tests (neither writes into it)."""
    out = tmp_path_factory.mktemp("lora-one") / "one"
    run(out, "ddp", 6, procs=1, lora_rank=4)
    return out


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_processes_equal_one(six_steps, strategy):
    one, two = six_steps(strategy, 1), six_steps(strategy, 2)
    assert_same(params(one), params(two), atol=1e-5)
    assert losses(one) == pytest.approx(losses(two), abs=1e-5)
    seen0 = torch.load(two / "seen-0.pt", weights_only=True)
    seen1 = torch.load(two / "seen-1.pt", weights_only=True)
    assert seen0.shape == seen1.shape == (6 * 2 * 4, 16)  # steps x micro-batches x B/2
    rows0, rows1 = {tuple(r) for r in seen0.tolist()}, {tuple(r) for r in seen1.tolist()}
    assert not rows0 & rows1  # each process saw different examples
    assert not (two / "seen-1.pt").samefile(two / "seen-0.pt")
    # the text's token file is encoded once, by one of the processes; the other reads it
    for out in (one, two):
        assert len(list(out.glob("encoded-by-*"))) == 1
        assert [p.suffix for p in (out / "tokens").glob("*.uint*")] == [".uint16"]


def test_sgd_with_two_processes_equals_one_under_fsdp(tmp_path):
    """FSDP's sharded parameters take SGD (PyTorch's multi-tensor kernel: the fused one has no
    sharded form), and its momentum buffers are saved whole: one process resumes them."""
    one, two = tmp_path / "one", tmp_path / "two"
    run(one, "fsdp", 6, procs=1, optimizer="sgd")
    run(two, "fsdp", 6, procs=2, stop_at=3, optimizer="sgd")
    run(two, "fsdp", 6, procs=1, resume=True, optimizer="sgd")
    assert_same(params(one), params(two), atol=1e-5)
    assert losses(one) == pytest.approx(losses(two), abs=1e-5)


def test_fsdp_resumes_with_two_processes(tmp_path, six_steps):
    """2 FSDP processes stop after the checkpoint at step 3; 2 processes resume from it and
    end where the uninterrupted run ends (each loads the whole state, then keeps its shard)."""
    out = tmp_path / "fsdp"
    run(out, "fsdp", 6, procs=2, stop_at=3)
    run(out, "fsdp", 6, procs=2, resume=True)
    whole = six_steps("fsdp", 2)
    assert_same(params(out), params(whole), atol=1e-5)
    assert losses(out) == pytest.approx(losses(whole), abs=1e-5)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_lora_with_two_processes_equals_one_and_resumes(tmp_path, lora_one, strategy):
    """LoRA's adapters train under DDP and FSDP as in one process, and 2 processes resume
    them from a checkpoint to the weights of the uninterrupted run."""
    one, two = lora_one, tmp_path / "two"
    run(two, strategy, 6, procs=2, stop_at=3, lora_rank=4)
    run(two, strategy, 6, procs=2, resume=True, lora_rank=4)
    assert_same(params(one), params(two), atol=1e-5)
    adapters = {k: v for k, v in params(two).items() if ".lora_" in k}
    assert len(adapters) == 8  # A and B of q_proj and v_proj, 2 blocks
    assert any(k.endswith("lora_B") and v.abs().max() > 0 for k, v in adapters.items())
    assert losses(one) == pytest.approx(losses(two), abs=1e-5)


def test_only_rank_zero_writes_and_checkpoints_move_between_process_counts(tmp_path, six_steps):
    # 2 processes of a 6-step run stop after the checkpoint at step 3; 1 process resumes.
    run(tmp_path / "mixed", "ddp", 6, procs=2, stop_at=3)
    written = sorted(p.name for p in (tmp_path / "mixed" / "run").iterdir())
    assert written == ["checkpoints", "metrics.jsonl"]
    assert [p.name for p in (tmp_path / "mixed" / "run" / "checkpoints").iterdir()] == [
        "step-000003"
    ]
    run(tmp_path / "mixed", "ddp", 6, procs=1, resume=True)
    whole = six_steps("ddp", 2)
    assert_same(params(tmp_path / "mixed"), params(whole), atol=1e-5)
    assert losses(tmp_path / "mixed") == pytest.approx(losses(whole), abs=1e-5)


def test_glassformer_train_under_torchrun(tmp_path):
    """The command itself: 2 processes, one run folder written once, resumable alone and
    with 2 processes again."""
    out = tmp_path / "run"
    common = [
        "train", "--data", "sort", "--out", str(out), "--set", "data.num_examples=256",
        "--set", "model.d_model=32", "--set", "model.n_layer=1", "--set", "train.batch_size=8",
        "--set", "train.eval_batches=2", "--set", "train.eval_generate=8",
        "--set", "train.save_every=3",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def torchrun() -> list[str]:
        return [
            sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        ]  # fmt: skip

    cmd = [*torchrun(), "-m", "glassformer", *common, "--steps", "3", "--strategy", "fsdp"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-8000:]
    assert done.stdout.count("checkpoints:") == 1  # the summary is printed once
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000003"]
    saved = out / "checkpoints" / "step-000003"  # FSDP's wrapper class is saved as the model's
    assert json.loads((saved / "config.json").read_text())["architecture"] == "EncoderDecoder"
    assert type(load_model(saved)) is EncoderDecoder
    alone = tmp_path / "alone"
    shutil.copytree(out, alone)
    resume = ["-m", "glassformer", "train", "--resume", "--steps", "5", "--out"]
    done = subprocess.run([sys.executable, *resume, str(alone)], env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-8000:]
    steps = [json.loads(x).get("step") for x in (alone / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 5
    # 2 processes resume too: the encoder and decoder share one embedding, which the sharded
    # model loads once (training/state.py, _shared_aliases); they end where 5 steps without
    # a stop end (1 process does not: a process's loss is a mean over its own targets)
    done = subprocess.run([*torchrun(), *resume, str(out)], env=env, capture_output=True,
                          text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr[-8000:]
    whole = tmp_path / "whole"
    common[common.index(str(out))] = str(whole)
    cmd = [*torchrun(), "-m", "glassformer", *common, "--steps", "5", "--strategy", "fsdp"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-8000:]
    last = "checkpoints/step-000005/model.safetensors"
    assert_same(load_file(out / last), load_file(whole / last), atol=1e-5)


def test_a_locked_run_directory_stops_every_process(tmp_path):
    """Only rank 0 checks the run lock; the other process must stop with it, not wait in its
    next collective until torchrun kills it."""
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        "-m", "glassformer", "train", "--data", "sort", "--out", str(out),
        "--set", "data.num_examples=64", "--set", "model.n_layer=1", "--steps", "2",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"is in use by process {os.getpid()}" in done.stderr
    assert "process 1 stops: another process of this run could not start" in done.stderr
    # the one traceback is torchrun's own report that a worker failed, not one of ours
    assert done.stderr.count("Traceback") == done.stderr.count("ChildFailedError:") == 1
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing written, lock kept
