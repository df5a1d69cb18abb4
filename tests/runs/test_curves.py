"""After a run: loss.png from metrics.jsonl, TensorBoard scalars when tensorboard is installed,
and one line (no failure) when matplotlib is missing."""

from __future__ import annotations

import shutil
import sys

import pytest

from glassformer.runs.curves import curves, read_metrics, write_loss_plot, write_tensorboard


def test_curves_are_the_logged_losses(cli, lm_run):
    records = read_metrics(lm_run[0])
    series = curves(records)
    assert series["train"] == cli.train_losses(lm_run[0])
    assert series["validation"] == [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]


def test_without_matplotlib_there_is_no_png(lm_run, tmp_path, monkeypatch):
    run = shutil.copytree(lm_run[0], tmp_path / "run", ignore=shutil.ignore_patterns("*.png"))
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    assert write_loss_plot(run) is None and not (run / "loss.png").exists()


def test_tensorboard_scalars(lm_run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = shutil.copytree(lm_run[0], tmp_path / "run")
    for _ in range(2):  # written again after a resume: replaced, not doubled
        log_dir = write_tensorboard(run)
    events = EventAccumulator(str(log_dir))
    events.Reload()
    val = [(e.step, e.value) for e in events.Scalars("val/loss")]
    logged = [(r["step"], r["val_loss"]) for r in read_metrics(run) if "val_loss" in r]
    assert [s for s, _ in val] == [s for s, _ in logged]
    assert [v for _, v in val] == pytest.approx([v for _, v in logged], rel=1e-6)
