"""A disk that fills up while ``glassformer train`` writes: one line and exit status 1, the
temporary checkpoint folder removed, the checkpoints before it intact, and ``--resume``
continuing from the newest of them, keeping fewer checkpoints when asked (train.keep_last).
The writes fail as they do on a full disk: safetensors raises a ``SafetensorError`` (not an
OSError) whose message ends in ``(os error 28)``, Python's own writes an ``OSError`` with
errno ENOSPC."""

from __future__ import annotations

import errno
import re

import pytest
from safetensors import SafetensorError

from glassformer import load_model

SAVE_EVERY_2 = ["--set", "train.save_every=2", "--set", "sample.max_new_tokens=0"]
# what safetensors 0.4-0.8 says when the disk is full (seen on a full tmpfs)
SAFETENSORS_FULL = "Error while serializing: I/O error: No space left on device (os error 28)"
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2}


def fail_second_call(raise_error):
    """A writer that writes its first file, then on its second call leaves a partial file
    and raises ``raise_error(path)``, as a write that runs out of room does."""
    calls = []

    def write(tensors, path, metadata=None):
        calls.append(path)
        if len(calls) == 2:
            with open(path, "wb") as f:
                f.write(b"\0" * 100)
            raise raise_error(path)
        from safetensors.torch import save_file

        save_file(tensors, path, metadata=metadata)

    return write


WRITERS = {
    "trainer.safetensors": (
        "glassformer.training.state.save_file",
        lambda path: SafetensorError(SAFETENSORS_FULL),
    ),
    "model.safetensors": (
        "glassformer.models.checkpoint.save_file",
        lambda path: OSError(errno.ENOSPC, "No space left on device", str(path)),
    ),
}


@pytest.mark.parametrize("failing", sorted(WRITERS))
def test_a_full_disk_during_a_checkpoint_is_one_line_and_resume_continues(
    cli, lm_files, tmp_path, monkeypatch, failing
):
    target, error = WRITERS[failing]
    out, checkpoints = tmp_path / "run", tmp_path / "run" / "checkpoints"
    argv = ["train", "--data", lm_files[0], "--out", out, *cli.TINY, *SAVE_EVERY_2]
    with monkeypatch.context() as m:
        m.setattr(target, fail_second_call(error))
        result = cli.run(*argv, "--steps", "6")

    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    errors = [line for line in result.err.splitlines() if not line.startswith("step ")]
    assert len(errors) == 1, result.err
    found = re.fullmatch(
        rf"glassformer: error: checkpoint step-000004 could not be saved in {checkpoints}: "
        r"no space left on device \(it needs about ([\d.]+) (B|KiB|MiB), [\d.]+ (B|KiB|MiB|GiB"
        r"|TiB) is free\); nothing of it was left there, step-000002 is intact; free some "
        rf"space, then continue with: glassformer train --out {out} --resume \(add --set "
        r"train.keep_last=1 to keep fewer checkpoints\)",
        errors[0],
    )
    assert found, errors[0]
    # the estimate is the tensors of a checkpoint: within 10% of the one written before
    kept = checkpoints / "step-000002"
    written = sum(p.stat().st_size for p in kept.iterdir())
    needed = float(found.group(1)) * UNITS[found.group(2)]
    assert abs(needed - written) < 0.1 * written, (needed, written)
    # nothing half-written: no temporary folder or file, the older checkpoint whole
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-000002"]
    assert not [p for p in out.rglob("*") if p.name.startswith(".") and p.name != ".lock"]
    assert not (out / ".lock").exists()
    assert load_model(kept).tokenizer is not None

    resumed = cli.run("train", "--out", out, "--resume", "--set", "train.keep_last=1")
    assert resumed.code == 0, resumed.err
    assert "resuming at step 2 to step 6" in resumed.out
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-000006"]  # the one kept
    assert [step for step, _ in cli.train_losses(out)] == [1, 2, 3, 4, 5, 6]


def test_a_full_disk_for_another_file_is_one_line(cli, lm_files, tmp_path, monkeypatch):
    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr("glassformer.training.metrics_log.append_text", full)
    out = tmp_path / "run"
    result = cli.run("train", "--data", lm_files[0], "--out", out, *cli.TINY, *SAVE_EVERY_2)
    assert result.code == 1, result.err
    assert result.err.splitlines()[-1] == (
        f"glassformer: error: {out / 'metrics.jsonl'}: No space left on device; free some "
        "space and try again"
    )
    assert "Traceback" not in result.err
