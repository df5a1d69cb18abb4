"""GLASSFORMER_TEST_SCALE, the test aid that shortens the documented commands' runs
(glassformer/cli/scale.py reads it, glassformer/runs/scale.py applies it): the counts of a run
times F, rounded up, recorded in run.json; a --steps given with --resume scaled alike; eval's
batches scaled; a bad value refused; the library reads no variable, it takes ``scale=F``."""

from __future__ import annotations

import json

import pytest

from glassformer.runs.scale import scaled

from .conftest import assert_user_error, run_cli


@pytest.mark.parametrize(
    ("count", "factor", "expected"),
    [(1000, 0.002, 2), (2000, 0.002, 4), (250, 0.002, 1), (1500, 0.002, 3), (0, 0.002, 0),
     (7, 1.0, 7), (3, 0.5, 2)],
)  # fmt: skip
def test_a_count_is_scaled_and_rounded_up(count, factor, expected):
    assert scaled(count, factor) == expected


def test_a_built_in_config_runs_scaled_into_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLASSFORMER_TEST_SCALE", "0.002")
    result = run_cli("train", "--config", "is_sorted")
    assert result.code == 0, result.err
    assert "GLASSFORMER_TEST_SCALE=0.002 (a test aid)" in result.err
    assert "training to step 3; run directory: runs/is_sorted" in result.out
    plan = json.loads((tmp_path / "runs/is_sorted/run.json").read_text())
    train = plan["train"]
    assert (train["steps"], train["warmup"], train["eval_every"], train["eval_batches"]) == (
        3, 1, 1, 1,
    )  # fmt: skip
    assert plan["data_options"]["num_examples"] == 40  # 20,000 x 0.002
    assert plan["settings"]["train"]["steps"] == 1500  # the settings as given

    result = run_cli("train", "--out", "runs/is_sorted", "--resume", "--steps", "3000")
    assert result.code == 0, result.err
    assert "resuming at step 3 to step 6" in result.out

    result = run_cli("eval", "--checkpoint", "runs/is_sorted", "--batch-size", "8")
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "runs/is_sorted/eval.json").read_text())
    assert report["examples"] == 8  # 5 batches of the 40 validation examples x 0.002: 1 batch


def test_the_library_takes_the_factor_and_reads_no_variable(tmp_path, monkeypatch):
    from glassformer.runs import make_plan

    monkeypatch.setenv("GLASSFORMER_TEST_SCALE", "0.5")
    settings = {"run": {"data": "is_sorted", "out": str(tmp_path / "r")}}
    assert make_plan(settings).train.steps == 2000  # the variable is the command line's
    assert make_plan(settings, scale=0.002).train.steps == 4
    with pytest.raises(ValueError, match="scale=2: allowed a number F with 0 < F <= 1"):
        make_plan(settings, scale=2)


@pytest.mark.parametrize("value", ["0", "2", "-1", "fast", "nan"])
def test_a_scale_outside_0_to_1_is_refused(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLASSFORMER_TEST_SCALE", value)
    result = run_cli("train", "--config", "is_sorted")
    assert_user_error(result, f"GLASSFORMER_TEST_SCALE={value}", "0 < F <= 1")
    assert not (tmp_path / "runs").exists()
