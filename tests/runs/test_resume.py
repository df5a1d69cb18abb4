"""``--resume``: an interrupted run (Ctrl-C) continues to the same losses and weights as an
uninterrupted one; a larger ``--steps`` extends a finished run the same way.

The learning rate is constant after a 2-step warmup (min_lr = lr), so a run's schedule does not
depend on its length and a run extended from 8 to 16 steps must equal a 16-step run."""

from __future__ import annotations

import signal

import pytest
import torch

from glassformer import load_model
from glassformer.training import Trainer

CONSTANT_LR = ["--set", "train.min_lr=1e-2", "--set", "train.save_every=4"]


def train(cli, data, out, *extra):
    return cli.run("train", "--data", data, "--out", out, *cli.TINY, *CONSTANT_LR, *extra)


def weights(ckpt):
    return load_model(ckpt).state_dict()


def assert_same_weights(a, b):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=0, atol=0, msg=name)


@pytest.fixture(scope="module")
def whole(cli, tmp_path_factory, lm_files):
    out = tmp_path_factory.mktemp("whole") / "run"
    result = train(cli, lm_files[0], out, "--steps", "16")
    assert result.code == 0, result.err
    return out


def test_ctrl_c_exits_130_and_resume_equals_the_uninterrupted_run(
    cli, whole, lm_files, tmp_path, monkeypatch
):
    step = Trainer.train_step

    def press_ctrl_c_in_step_7(self):
        if self.step == 6:
            signal.raise_signal(signal.SIGINT)  # the trainer finishes step 7, saves, returns
        return step(self)

    out = tmp_path / "run"
    with monkeypatch.context() as m:
        m.setattr(Trainer, "train_step", press_ctrl_c_in_step_7)
        stopped = train(cli, lm_files[0], out, "--steps", "16")
    assert stopped.code == 130
    *progress, last = stopped.err.splitlines()  # the step lines, then one line on stopping
    assert [line.split(":")[0] for line in progress] == [f"step {i}/16" for i in range(1, 8)]
    assert last == (
        f"glassformer: interrupted at step 7; saved in {out}; continue with: "
        f"glassformer train --out {out} --resume"
    )
    assert (out / "checkpoints" / "step-000007").is_dir()

    resumed = cli.run("train", "--out", out, "--resume")
    assert resumed.code == 0, resumed.err
    assert "resuming at step 7 to step 16" in resumed.out
    assert cli.train_losses(out) == cli.train_losses(whole)
    assert_same_weights(out / "checkpoints" / "step-000016", whole / "checkpoints" / "step-000016")


def test_larger_steps_extend_a_finished_run(cli, whole, lm_files, tmp_path):
    out = tmp_path / "run"
    assert train(cli, lm_files[0], out, "--steps", "8").code == 0
    extended = cli.run("train", "--out", out, "--resume", "--steps", "16")
    assert extended.code == 0, extended.err
    assert "resuming at step 8 to step 16" in extended.out
    assert [s for s, _ in cli.train_losses(out)] == list(range(1, 17))
    assert cli.train_losses(out) == cli.train_losses(whole)
    assert_same_weights(out / "checkpoints" / "step-000016", whole / "checkpoints" / "step-000016")

    again = cli.run("train", "--out", out, "--resume", "--steps", "16")
    assert again.code == 0 and "already reached step 16" in again.out
    cli.assert_user_error(
        cli.run("train", "--out", out, "--resume", "--steps", "4"), "below step 16"
    )
    # the same options as the run's are accepted, other ones refused naming the setting
    same = train(cli, lm_files[0], out, "--resume", "--steps", "16")
    assert same.code == 0, same.err
    changed = cli.run("train", "--out", out, "--resume", "--set", "train.lr=0.5")
    cli.assert_user_error(changed, "train.lr=0.01", "0.5")
