"""Limits on the command line: out of memory, --steps 0, empty data, a prompt longer than the
model's context. Each is one line on stderr with exit status 2, naming what to change, and
leaves nothing half-written."""

import os
import resource
import subprocess
import sys

import pytest
import torch

from glassformer import load_model
from glassformer.generation import GenerationConfig, generate
from glassformer.training import Trainer


def train_args(cli, data, out, *extra):
    return ["train", "--data", data, "--out", out, *cli.TINY, *extra]


@pytest.mark.parametrize(
    "error",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: "
            "you tried to allocate 1099511627776 bytes."
        ),
        RuntimeError("MPS backend out of memory (MPS allocated: 9.00 GB)"),
    ],
    ids=["cuda", "cpu", "mps"],
)
def test_out_of_memory_names_the_settings_to_lower(cli, lm_files, tmp_path, monkeypatch, error):
    def fit(self, **kwargs):
        raise error

    monkeypatch.setattr(Trainer, "fit", fit)
    result = cli.run(*train_args(cli, lm_files[0], tmp_path / "run", "--steps", "2"))
    cli.assert_user_error(
        result, "out of memory", "--set train.batch_size", "--set model.max_len", "grad_accum"
    )


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
def test_a_real_allocation_failure_is_one_line_and_the_folder_can_start_over(tmp_path):
    """A separate process limited to 3 GiB of address space (RLIMIT_AS) asks for a batch
    that needs far more: torch's allocator fails for real, the command says which settings
    to lower, and the same --out then trains with a smaller batch (nothing was saved, so
    nothing is lost by starting over)."""
    data = tmp_path / "train.txt"
    data.write_text("the cat sat on the mat.\n" * 100_000)  # 2.4 MB: 4,687 windows of 512
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "glassformer", "train", "--data", str(data), "--out", str(out)]
    cmd += ["--set", "model.max_len=512", "--steps", "1", "--set", "train.warmup=1"]  # no note
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    big = subprocess.run(
        [*cmd, "--set", "train.batch_size=4096"],
        env=env, preexec_fn=limit, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert big.returncode == 2, big.stderr[-2000:]
    *shown, error = big.stderr.strip().splitlines()
    progress = ("training the char tokenizer on train.txt: ", "encoding train.txt: ")
    assert shown and all(s.startswith(progress) for s in shown), shown  # the caches' progress
    assert error.startswith("glassformer: error: out of memory ("), error
    assert "can't allocate memory" in error and "--set train.batch_size" in error
    assert not (out / "checkpoints").exists()
    small = subprocess.run(
        [*cmd, "--set", "train.batch_size=2", "--set", "model.n_layer=1"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert small.returncode == 0, small.stderr[-2000:]
    assert (out / "checkpoints" / "step-000001").is_dir()


def test_other_runtime_errors_are_not_called_out_of_memory(cli, lm_files, tmp_path, monkeypatch):
    def fit(self, **kwargs):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    monkeypatch.setattr(Trainer, "fit", fit)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        cli.run(*train_args(cli, lm_files[0], tmp_path / "run", "--steps", "2"))


def test_steps_0_is_refused_before_anything_is_written(cli, lm_files, tmp_path):
    out = tmp_path / "run"
    result = cli.run(*train_args(cli, lm_files[0], out, "--steps", "0"))
    cli.assert_user_error(result, "--steps 0", "trains nothing", "N >= 1")
    assert not out.exists()
    cli.assert_user_error(
        cli.run(*train_args(cli, lm_files[0], out, "--set", "train.steps=0")), "trains nothing"
    )


@pytest.mark.parametrize("text", ["", "\n\n\n"], ids=["empty", "blank-lines"])
def test_empty_data_is_refused(cli, tmp_path, text):
    data = tmp_path / "train.txt"
    data.write_text(text)
    out = tmp_path / "run"
    result = cli.run(*train_args(cli, data, out, "--steps", "2"))
    cli.assert_user_error(result, str(data), "empty")
    assert not out.exists()


def test_prompt_longer_than_the_context(cli, lm_run):
    """The library refuses a prompt longer than max_len when the model has no sliding window
    (tests/generation); the command line, as documented, slides the window and goes on."""
    run, _ = lm_run  # context (max_len) 16
    model = load_model(run / "checkpoints" / "step-000040")
    ids = torch.full((1, 20), 5)
    with pytest.raises(ValueError, match="max_len is 16"):
        generate(model, ids, GenerationConfig(max_new_tokens=1))
    result = cli.run("generate", "--checkpoint", run, "--prompt", "the cat sat " * 4, "--seed", "1")
    assert result.code == 0 and result.out.startswith("the cat sat " * 4), result.err
