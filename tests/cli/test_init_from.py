"""``glassformer train --init-from PATH``: a run that starts from a glassformer checkpoint or
run folder says what it took and what is new; the refusals are one line each and write
nothing. (Hugging Face directories: tests/runs/test_init_from.py.)"""

from __future__ import annotations

import json
import shutil

import pytest

ROWS = "label,text\n" + "".join(
    f"pos,the cat sat {i}\n" if i % 2 else f"neg,on the mat {i}\n" for i in range(40)
)
SMALL = ["--set", "train.batch_size=4", "--set", "train.log_every=1",
         "--set", "train.eval_batches=1"]  # fmt: skip


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(ROWS, encoding="utf-8")
    return path


def test_a_classifier_from_a_masked_lm_run(cli, task_runs, rows, tmp_path):
    out = tmp_path / "run"
    result = cli.run("train", "--data", rows, "--init-from", task_runs["mlm"], "--out", out,
                     "--steps", "2", *SMALL)  # fmt: skip
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    start = next(line for line in lines if line.startswith("init from"))
    assert start.startswith(f"init from {task_runs['mlm'].resolve()}: 0.")
    assert start.endswith(
        "parameters from it; new: classifier 32 -> 2; train.lr=5e-05, train.warmup=0"
    )
    assert "pretrained tokenizer" in result.out
    run = json.loads((out / "run.json").read_text())
    assert run["init_from"] == str(task_runs["mlm"].resolve())
    assert run["train"]["lr"] == 5e-5 and run["train"]["warmup"] == 0  # 10% of 2 steps
    resumed = cli.run("train", "--out", out, "--resume", "--steps", "3")
    assert resumed.code == 0, resumed.err
    assert "resuming at step 2 to step 3" in resumed.out and "init from" not in resumed.out


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "nowhere", ["--init-from", "nowhere: no such folder", "allowed"]),
        (lambda tmp: tmp, ["not a model (no config.json)", "Hugging Face model directory"]),
        (lambda tmp: "", ["--init-from '': an empty path; allowed"]),
        (lambda tmp: tmp / "notes.txt", ["notes.txt: not a folder; allowed"]),
    ],
)
def test_a_missing_folder_or_one_without_a_model_is_refused(cli, rows, tmp_path, make, words):
    (tmp_path / "notes.txt").write_text("not a model")
    out = tmp_path / "run"
    result = cli.run("train", "--data", rows, "--init-from", make(tmp_path), "--out", out)
    cli.assert_user_error(result, *words)
    assert not out.exists()


@pytest.mark.parametrize("left", ["run.json only", "an empty checkpoints folder"])
def test_a_run_with_no_checkpoint_yet_is_named_as_such(cli, task_runs, rows, tmp_path, left):
    started = tmp_path / "started"
    shutil.copytree(task_runs["mlm"], started)
    shutil.rmtree(started / "checkpoints")
    if left == "an empty checkpoints folder":
        (started / "checkpoints").mkdir()
    out = tmp_path / "run"
    result = cli.run("train", "--data", rows, "--init-from", started, "--out", out)
    cli.assert_user_error(
        result,
        f"--init-from {started}: the run has no checkpoint yet (nothing in "
        f"{started / 'checkpoints'}); train it until it saves one (train.save_every), or pick "
        "a run or checkpoint folder that has one",
    )
    assert not out.exists()


def test_a_model_of_another_family_is_refused(cli, task_runs, tmp_path):
    out = tmp_path / "run"
    text = tmp_path / "t.txt"
    text.write_text("the cat sat on the mat\n" * 20)
    result = cli.run("train", "--data", text, "--init-from", task_runs["seq2seq"], "--out", out)
    cli.assert_user_error(
        result, "an encoder-decoder model (EncoderDecoder); --task lm needs decoder (DecoderLM)"
    )
    assert not out.exists()


def test_a_setting_that_contradicts_the_weights_is_refused(cli, task_runs, rows, tmp_path):
    out = tmp_path / "run"
    result = cli.run("train", "--data", rows, "--init-from", task_runs["mlm"], "--out", out,
                     "--set", "model.d_model=64")  # fmt: skip
    cli.assert_user_error(result, "--set model.d_model=64 contradicts the weights", "d_model=32")
    assert not out.exists()


def test_a_preset_or_tokenizer_with_init_from_is_refused(cli, task_runs, rows, tmp_path):
    out = tmp_path / "run"
    for option in (["--model", "tiny-encoder"], ["--tokenizer", "bpe"]):
        result = cli.run("train", "--data", rows, "--init-from", task_runs["mlm"], "--out", out,
                         *option)  # fmt: skip
        cli.assert_user_error(result, f"{option[0]} {option[1]} and --init-from", "leave")
    assert not out.exists()


def test_a_classifier_from_a_language_model_evaluates_and_predicts(cli, lm_run, rows, tmp_path):
    out = tmp_path / "run"
    result = cli.run("train", "--data", rows, "--init-from", lm_run[0], "--out", out,
                     "--steps", "2", *SMALL)  # fmt: skip
    assert result.code == 0, result.err
    config = json.loads((out / "checkpoints" / "step-000002" / "config.json").read_text())
    assert config["architecture"] == "DecoderClassifier"
    assert config["config"]["pooling"] == "last"
    evaluated = cli.run("eval", "--checkpoint", out)
    assert evaluated.code == 0, evaluated.err
    assert "accuracy" in json.loads((out / "eval.json").read_text())["metrics"]
    predicted = cli.run("predict", "--checkpoint", out, "--text", "the cat sat", "--json")
    assert predicted.code == 0, predicted.err
    assert json.loads(predicted.out)["label"] in ("pos", "neg")
