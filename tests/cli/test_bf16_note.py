"""train.bf16 on a CPU without bfloat16 instructions (emulated: several times slower than
float32) gets one ``glassformer: note:`` line; on a CPU with them, none."""

from __future__ import annotations

import pytest
import torch

from glassformer.training import runtime


@pytest.mark.parametrize("native", [True, False])
def test_bf16_on_a_cpu_without_bfloat16_gets_one_note(cli, lm_files, tmp_path, monkeypatch, native):
    monkeypatch.setattr(runtime, "cpu_has_bf16", lambda: native)
    result = cli.run(
        "train", "--data", lm_files[0], "--out", tmp_path / "run", "--steps", "2", *cli.TINY,
        "--set", "train.bf16=true", "--device", "cpu", "--set", "sample.max_new_tokens=0",
    )  # fmt: skip
    assert result.code == 0, result.err
    notes = [line for line in result.err.splitlines() if line.startswith("glassformer: note:")]
    if native:
        assert notes == []
    else:
        assert len(notes) == 1
        assert "train.bf16" in notes[0] and "no bfloat16 instructions" in notes[0]
    assert "Warning" not in result.err


def test_cpu_bf16_detection_reads_torch_capabilities(monkeypatch):
    flags = {"avx2": True, "avx512_bf16": False, "amx_bf16": False}
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: flags, raising=False)
    assert runtime.cpu_has_bf16() is False
    flags["avx512_bf16"] = True
    assert runtime.cpu_has_bf16() is True
