"""User mistakes: one line on stderr (``glassformer: error: ...``), exit status 2, no
traceback; a failed run exits 1, Ctrl-C 130 and SIGTERM 143, each with one line. ``--help``
everywhere."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys

import pytest

from glassformer.cli import build_parser
from glassformer.training import Trainer, TrainingError

TRAIN_ERRORS = {
    "unknown task": (["--task", "bogus"], ["--task", "invalid choice", "'bogus'"]),
    "unknown data name": (["--data", "nosuch"], ["--data nosuch", "does not exist", "reverse"]),
    "missing file": (["--data", "{tmp}/missing.txt"], ["missing.txt", "does not exist"]),
    "tsv needs a task": (["--data", "{tmp}/pairs.tsv"], ["--task seq2seq or --task classify"]),
    "data of another task": (["--data", "reverse", "--task", "lm"], ["'reverse'", "seq2seq"]),
    "unknown data option": (["--data", "reverse", "--set", "data.colour=1"], ["colour"]),
    "unknown model key": (["--set", "model.bogus=1"], ["model.bogus", "d_model", "n_layer"]),
    "unknown train key": (["--set", "train.speed=2"], ["train.speed", "batch_size"]),
    "unknown section": (["--set", "optim.lr=2"], ["'optim'", "run, model, train, data"]),
    "key without section": (["--set", "lr=1"], ["needs a section"]),
    "no value": (["--set", "train.lr"], ["SECTION.KEY=VALUE"]),
    "bad value type": (["--set", "train.lr=fast"], ["train.lr='fast'", "float"]),
    "bad value": (["--set", "train.lr=-1"], ["lr=-1", "> 0"]),
    "derived key": (["--set", "model.vocab_size=10"], ["cannot be set", "tokenizer"]),
    "other name of a field": (
        ["--set", "model.ff_dim=64"],
        ["model.ff_dim is not a ModelConfig field; use model.d_ff"],
    ),
    "other name of a derived key": (
        ["--set", "model.target_vocab_size=64"],
        ["model.target_vocab_size cannot be set", "tokenizer"],
    ),
    "bad model value": (
        ["--data", "{tmp}/a.txt", "--set", "model.d_model=30"],
        ["d_model=30", "n_head=4"],
    ),
    "batch norm in a decoder": (
        ["--data", "{tmp}/a.txt", "--set", "model.norm=batch"],
        ["norm='batch' cannot be used with family='decoder'", "position n", "norm='layer'"],
    ),
    "batch norm in an encoder-decoder": (
        ["--data", "reverse", "--set", "model.norm=batch"],
        ["norm='batch' cannot be used with family='encoder-decoder'"],
    ),
    "bad attention scores": (
        ["--data", "{tmp}/a.txt", "--set", "model.attention_scores=bogus"],
        ["attention_scores='bogus'", "('separate', 'shared', 'dot')"],
    ),
    "symmetric scores with grouped-query attention": (
        ["--data", "{tmp}/a.txt", "--model", "tiny-llama", "--set", "model.attention_scores=dot"],
        ["attention_scores='dot'", "n_kv_head = n_head (4), got n_kv_head=2"],
    ),
    "unknown preset": (["--model", "huge"], ["--model huge", "tiny-llama"]),
    "preset of another family": (["--data", "reverse", "--model", "tiny"], ["encoder-decoder"]),
    "missing config": (["--config", "{tmp}/none.toml"], ["none.toml", "shakespeare-char"]),
    "bad config": (["--config", "{tmp}/bad.toml"], ["bad.toml", "not valid TOML"]),
    "config key": (["--config", "{tmp}/key.toml"], ["key.toml", "unknown key run.colour"]),
    "negative steps": (["--steps", "-3"], ["--steps", "must be >= 0"]),
    "bad device": (["--device", "tpu"], ["--device", "invalid choice"]),
    "vocab size for char": (["--vocab-size", "99"], ["--vocab-size applies"]),
    "resume nothing": (["--resume", "--out", "{tmp}"], ["nothing to resume", "run.json"]),
}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pairs.tsv").write_text("ab\tba\n")
    (tmp_path / "a.txt").write_text("abc abc abc\n")
    (tmp_path / "bad.toml").write_text("[train\nlr = 1\n")
    (tmp_path / "key.toml").write_text('[run]\ncolour = "red"\n')
    return tmp_path


@pytest.mark.parametrize("case", TRAIN_ERRORS, ids=list(TRAIN_ERRORS))
def test_train_user_errors(cli, files, case):
    argv, words = TRAIN_ERRORS[case]
    result = cli.run("train", *(a.format(tmp=files) for a in argv))
    cli.assert_user_error(result, *words)
    assert not (files / "runs").exists()


def test_out_directory_holding_another_run(cli, lm_run, lm_files):
    result = cli.run("train", "--data", lm_files[0], "--out", lm_run[0])
    cli.assert_user_error(result, str(lm_run[0]), "already holds a run", "--resume")


def corrupt_copy(src, dst):
    shutil.copytree(src, dst)
    weights = dst / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    return dst


def test_checkpoint_errors(cli, lm_run, task_runs, tmp_path):
    lm = lm_run[0] / "checkpoints" / "step-000040"
    classifier = task_runs["classify"] / "checkpoints" / "step-000020"
    lone = tmp_path / "lone"
    shutil.copytree(lm, lone)
    (tmp_path / "empty").mkdir()
    (tmp_path / "none.txt").write_text("x\n")
    bad = corrupt_copy(lm, tmp_path / "bad")
    cases = [
        (["eval", "--checkpoint", tmp_path / "nope"], ["nope", "no such directory"]),
        (["eval", "--checkpoint", tmp_path / "empty"], ["neither a checkpoint"]),
        (["eval", "--checkpoint", bad, "--data", "shakespeare"], ["model.safetensors"]),
        (["eval", "--checkpoint", lone], ["give --data FILE"]),
        (["eval", "--checkpoint", lm, "--data", "reverse"], ["'reverse'", "seq2seq"]),
        (["eval", "--checkpoint", lm, "--set", "train.lr=1"], ["only data.KEY=VALUE"]),
        (["generate", "--checkpoint", classifier], ["class EncoderClassifier", "generate takes"]),
        (["generate", "--checkpoint", bad], ["model.safetensors"]),
        (["generate", "--checkpoint", lm, "--temperature", "-1"], ["temperature=-1.0"]),
        (["generate", "--checkpoint", lm, "--top-p", "2"], ["top_p=2.0"]),
        (["generate"], ["--checkpoint", "required"]),
        (["predict", "--checkpoint", lm, "--text", "a"], ["class DecoderLM", "predict takes"]),
        (["predict", "--checkpoint", classifier], ["--text", "--file", "required"]),
        (["predict", "--checkpoint", classifier, "--file", tmp_path / "no.txt"], ["no.txt"]),
        (["predict", "--checkpoint", task_runs["mlm"], "--text", "abc"], ["has no <MASK>"]),
        ([], ["choose a command"]),
        (["fly"], ["invalid choice", "'fly'"]),
    ]
    for argv, words in cases:
        cli.assert_user_error(cli.run(*argv), *words)


def test_a_failed_run_exits_1_with_one_line(cli, lm_files, tmp_path, monkeypatch):
    def explode(self):
        raise TrainingError("step 1: the loss (nan) or gradient norm (nan) is not finite")

    monkeypatch.setattr(Trainer, "train_step", explode)
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "r", *cli.TINY)
    assert result.code == 1
    assert result.err.splitlines() == [
        "glassformer: error: step 1: the loss (nan) or gradient norm (nan) is not finite"
    ]


def test_sigterm_while_training_saves_says_terminated_and_exits_143(
    cli, lm_files, tmp_path, monkeypatch
):
    step = Trainer.train_step

    def terminate_in_step_2(self):
        if self.step == 1:
            signal.raise_signal(signal.SIGTERM)  # the trainer finishes step 2, saves, returns
        return step(self)

    monkeypatch.setattr(Trainer, "train_step", terminate_in_step_2)
    out = tmp_path / "r"
    result = cli.run("train", "--data", lm_files[0], "--out", out, *cli.TINY, "--steps", "9")
    assert result.code == 143
    assert result.err.splitlines()[-1] == (
        f"glassformer: terminated at step 2; saved in {out}; continue with: "
        f"glassformer train --out {out} --resume"
    )
    assert (out / "checkpoints" / "step-000002").is_dir()


def test_ctrl_c_before_training_exits_130_with_one_line(cli, lm_files, tmp_path, monkeypatch):
    def interrupt(plan):
        raise KeyboardInterrupt

    monkeypatch.setattr("glassformer.runs.loading.load_splits", interrupt)
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "r")
    assert (result.code, result.err) == (130, "glassformer: interrupted\n")


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command"]
    assert set(commands.choices) >= {"train", "eval", "generate", "predict"}
    for name, sub in commands.choices.items():
        for action in sub._actions:
            assert action.help, (name, action.option_strings)
        assert sub.description, name


def test_python_m_glassformer_help_and_a_user_error():
    run = [sys.executable, "-m", "glassformer"]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0
    for name in ("train", "eval", "generate", "predict"):
        assert f"\n    {name} " in helped.stdout
    failed = subprocess.run(
        [*run, "train", "--data", "no/such/file.txt"], capture_output=True, text=True, timeout=120
    )
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        "glassformer: error: --data no/such/file.txt: the file does not exist; allowed a "
        "built-in dataset (shakespeare, shakespeare-genre, reverse, sort, addition, is_sorted, "
        "induction, interleaved), a .txt, .tsv, .csv, .jsonl or .parquet file (or one gzipped, "
        ".gz), a folder of .txt files or a datasets folder"
    ]
