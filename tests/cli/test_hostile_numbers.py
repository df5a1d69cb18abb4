"""A tampered trainer.json whose numbers would poison the run (a NaN learning rate): ``--resume``
names the file, the field and its value in one line (exit 2), instead of training on to a loss
that is not finite and advising a lower ``train.lr``. The numbers one by one are in
tests/training/test_hostile_state.py."""

from __future__ import annotations

import json

from glassformer.training.state import latest_checkpoint


def test_a_nan_learning_rate_in_trainer_json_is_named(cli, lm_files, tmp_path):
    out = tmp_path / "run"
    args = ["--data", lm_files[0], "--out", out, *cli.TINY, "--set", "train.save_every=2"]
    assert cli.run("train", *args, "--steps", "2").code == 0
    state = latest_checkpoint(out) / "trainer.json"
    meta = json.loads(state.read_text())
    meta["optimizer"]["param_groups"][0]["lr"] = float("nan")
    state.write_text(json.dumps(meta))  # Python's json writes NaN, as a hand edit might

    result = cli.run("train", "--out", out, "--resume", "--steps", "4")
    cli.assert_user_error(
        result,
        f"{state}: optimizer.param_groups[0].lr is nan; allowed a finite number >= 0",
    )
    assert "train.lr" not in result.err
    assert latest_checkpoint(out).name == "step-000002"  # nothing trained, nothing written
