"""A run whose validation loss turns NaN (plain SGD at a learning rate of 1e12 on a tiny
classifier) fails: exit 1, one line naming the step, the value and what to try; no checkpoint
holds the NaN weights, and metrics.jsonl stays strict JSON (``null`` for the NaN)."""

from __future__ import annotations

import json


def test_a_nan_validation_loss_fails_the_run(cli, tmp_path):
    data = tmp_path / "mail.csv"
    data.write_text(
        "text,label\n"
        + "".join(f"win a prize now {i},spam\n" if i % 2 else f"lunch at noon {i},ham\n"
                  for i in range(40))
    )  # fmt: skip
    out = tmp_path / "run"
    sgd = ["--set", "train.optimizer=sgd", "--set", "train.lr=1e12", "--set", "train.warmup=0"]
    result = cli.run(
        "train", "--task", "classify", "--data", data, "--out", out, "--steps", "1", *cli.TINY,
        *sgd,
    )  # fmt: skip
    assert result.code == 1, result.err
    assert result.err.splitlines()[-1] == (
        "glassformer: error: step 1: the validation loss is nan after the step's update; lower "
        "train.lr (it is 1e+12; e.g. --set train.lr=1e+11); the run stopped before its first "
        f"checkpoint: {out} holds none"
    )
    assert "Traceback" not in result.err
    assert not (out / "checkpoints").exists()

    def refuse(word):
        raise ValueError(f"{word} is not JSON")

    lines = (out / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line, parse_constant=refuse) for line in lines]
    assert records[-2] == {"step": 1, "val_loss": None, "val_accuracy": 0.0}
    assert records[-1] == {"step": 1, "event": "diverged"}
