"""A run you can watch: piped or logged output gets one line every ``log_every`` steps and one
per evaluation (on stderr, where the progress bar goes); a terminal gets the bar, with each
evaluation printed above it."""

from __future__ import annotations

import io
import re
import sys

from glassformer.progress import Progress

STEP_LINE = re.compile(
    r"step (\d+)/10: loss (\d+\.\d{4}), lr (\S+), ([\d,]+) tokens/s, (\d+s|\d+m \d\ds) left"
)


def test_piped_training_prints_a_line_per_log_every_steps_and_each_evaluation(
    cli, lm_files, tmp_path
):
    out = tmp_path / "run"
    train, valid = lm_files
    result = cli.run(
        "train", "--data", train, "--val-data", valid, "--out", out, "--steps", "10", *cli.TINY,
        "--set", "train.log_every=3", "--set", "train.eval_every=4",
        "--set", "sample.max_new_tokens=0",
    )  # fmt: skip
    assert result.code == 0, result.err
    records = cli.metrics(out)
    logged = {r["step"]: r for r in records if "loss" in r}
    evaluated = {r["step"]: r["val_loss"] for r in records if "val_loss" in r}
    assert sorted(logged) == [3, 6, 9, 10] and sorted(evaluated) == [4, 8, 10]

    lines = result.err.splitlines()
    steps = [STEP_LINE.fullmatch(line) for line in lines if "/10:" in line]
    assert [int(m[1]) for m in steps] == [3, 6, 9, 10]
    for m in steps:
        record = logged[int(m[1])]
        assert m[2] == f"{record['loss']:.4f}"
        assert m[3] == f"{record['lr']:.2e}"
        assert int(m[4].replace(",", "")) == round(record["tokens_per_s"])
    # each evaluation in its place among the step lines; the last one is the printed result
    shown = [ln.split(",")[0] for ln in lines if ln.startswith("step ")]
    assert [int(re.match(r"step (\d+)", ln)[1]) for ln in shown] == [3, 4, 6, 8, 9, 10]
    assert [ln for ln in shown if "validation" in ln] == [
        f"step {s}: validation loss {evaluated[s]:.4f}" for s in (4, 8)
    ]
    assert f"step 10: validation loss {evaluated[10]:.4f}" in result.out


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_bar_with_each_evaluation_above_it(monkeypatch):
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    shown = Progress("bar", total=4, initial=0)
    for step in (1, 2):
        shown.step(step, loss=2.5, lr=1e-3, tokens_per_s=100.0, log=True)
    shown.evaluation(2, {"loss": 2.25, "perplexity": 9.4877})
    shown.step(3, loss=2.0, lr=1e-3, tokens_per_s=100.0, log=True)
    shown.close()
    text = screen.getvalue()
    assert "step 2: validation loss 2.2500, perplexity 9.4877\n" in text
    assert "step 3/4" not in text  # no log lines under a bar: the bar shows the step
    assert text.index("2/4") < text.index("validation") < text.index("3/4")
    assert "loss=2.0000" in text
