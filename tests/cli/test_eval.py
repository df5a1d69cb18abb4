"""``glassformer eval``: the trainer's metrics, printed and written as JSON."""

from __future__ import annotations

import json

import pytest


def logged(cli, run_dir, step):
    """The validation metrics the trainer logged at ``step``."""
    (record,) = [r for r in cli.metrics(run_dir) if r["step"] == step and "val_loss" in r]
    return {k[4:]: v for k, v in record.items() if k.startswith("val_")}


@pytest.mark.parametrize(
    ("name", "step", "keys"),
    [
        ("lm", 40, {"loss", "perplexity"}),
        ("mlm", 20, {"loss", "perplexity"}),
        ("classify", 20, {"loss", "accuracy"}),
        ("seq2seq", 20, {"loss", "exact_match", "token_accuracy"}),
    ],
)
def test_eval_of_a_checkpoint_equals_the_trainers_validation(
    cli, lm_run, task_runs, name, step, keys
):
    run_dir = lm_run[0] if name == "lm" else task_runs[name]
    ckpt = run_dir / "checkpoints" / f"step-{step:06d}"
    # the trainer evaluated eval_batches=2 batches of batch_size=8 of the run's validation data
    result = cli.run("eval", "--checkpoint", ckpt, "--batches", "2", "--batch-size", "8")
    assert result.code == 0, result.err
    report = json.loads((ckpt / "eval.json").read_text())
    assert set(report["metrics"]) == keys
    assert report["metrics"] == pytest.approx(logged(cli, run_dir, step), rel=1e-6)
    assert report["checkpoint"] == str(ckpt) and report["split"] == "validation"
    width = max(map(len, keys))
    for key, value in report["metrics"].items():
        assert f"\n  {key:<{width}}  {value:.6g}\n" in result.out
    assert result.out.rstrip().endswith(f"wrote {ckpt / 'eval.json'}")


def test_eval_of_a_run_folder_uses_its_best_checkpoint(cli, lm_run, tmp_path):
    run_dir = lm_run[0]
    newest = sorted((run_dir / "checkpoints").iterdir())[-1]
    best = json.loads((newest / "trainer.json").read_text())["best"]["step"]
    kept = [int(p.name[5:]) for p in (run_dir / "checkpoints").iterdir()]
    assert best in kept
    result = cli.run(
        "eval", "--checkpoint", run_dir, "--json", tmp_path / "m.json", "--batch-size", "8"
    )
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["checkpoint"] == str(run_dir / "checkpoints" / f"step-{best:06d}")
    assert report["metrics"] == pytest.approx(logged(cli, run_dir, best), rel=1e-6)
    best_loss = min(r["val_loss"] for r in cli.metrics(run_dir) if "val_loss" in r)
    assert report["metrics"]["loss"] == pytest.approx(best_loss, rel=1e-6)
