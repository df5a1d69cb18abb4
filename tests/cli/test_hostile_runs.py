"""A run folder with a garbage run.json or a spoilt training state: ``--resume`` refuses it
in one line (exit 2) naming the file, and leaves the folder as it was."""

import shutil

import pytest
from safetensors.torch import load_file, save_file

from glassformer.training.state import latest_checkpoint


@pytest.fixture(scope="module")
def small_run(cli, lm_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile-runs") / "run"
    args = ["--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY]
    result = cli.run("train", *args, "--set", "train.save_every=2")
    assert result.code == 0, result.err
    return out


RUN_JSON = {
    "not utf-8": b"\xff\xfe\x00garbage",
    "not json": b'{"format": "glassformer-run", ',
    "a list": b"[1, 2, 3]",
    "another format": b'{"format": "pickle", "version": 1}',
    "no model": b'{"format": "glassformer-run", "version": 1}',
    "absurd vocabulary": b'{"format": "glassformer-run", "version": 1, '
    b'"model": {"vocab_size": 1000000000000}}',
}


@pytest.mark.parametrize("case", RUN_JSON, ids=list(RUN_JSON))
def test_garbage_run_json_is_one_line(cli, small_run, tmp_path, case):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    (run / "run.json").write_bytes(RUN_JSON[case])
    before = sorted(p.name for p in run.rglob("*"))
    result = cli.run("train", "--out", run, "--resume", "--steps", "4")
    cli.assert_user_error(result, str(run / "run.json"), "not a readable run file")
    assert sorted(p.name for p in run.rglob("*")) == before
    assert (run / "run.json").read_bytes() == RUN_JSON[case]


@pytest.mark.parametrize("name", ["trainer.json", "trainer.safetensors"])
def test_truncated_training_state_is_one_line(cli, small_run, tmp_path, name):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spoilt = latest_checkpoint(run) / name
    spoilt.write_bytes(spoilt.read_bytes()[:40])
    result = cli.run("train", "--out", run, "--resume", "--steps", "4")
    cli.assert_user_error(result, str(spoilt), "unreadable training state")
    assert latest_checkpoint(run).name == "step-000002"  # nothing newer was written
    assert not (run / ".lock").exists()


@pytest.mark.parametrize(
    ("file", "what"),
    [("model.safetensors", "the weights are"), ("trainer.safetensors", "the optimizer's state is")],
)
def test_resume_refuses_nan_in_the_training_state_naming_the_tensor(
    cli, small_run, tmp_path, file, what
):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spoilt = latest_checkpoint(run) / file
    tensors = load_file(spoilt)
    name = sorted(
        n for n in tensors if n.endswith(("q_proj.weight", "q_proj.weight/exp_avg_sq"))
    )[0]
    tensors[name].view(-1)[:2] = float("nan")
    save_file(tensors, spoilt)
    result = cli.run("train", "--out", run, "--resume", "--steps", "4")
    cli.assert_user_error(result, f"{spoilt}: tensor {name!r} holds 2 NaN values: {what} damaged")
    assert latest_checkpoint(run).name == "step-000002"  # nothing newer was written
    assert not (run / ".lock").exists()
