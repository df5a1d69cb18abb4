"""``glassformer train``: the run directory, falling losses, every task, settings, the demo."""

from __future__ import annotations

import json

import pytest

from glassformer import load_model
from glassformer.cli import build_parser
from glassformer.cli.train import gather_settings
from glassformer.data import load_dataset
from glassformer.generation import generate_text
from glassformer.runs.plan import make_plan
from glassformer.runs.settings import load_config, parse_value


def test_lm_run_directory_and_falling_loss(cli, lm_run):
    out, result = lm_run
    assert {p.name for p in out.iterdir()} >= {"run.json", "metrics.jsonl", "checkpoints"}
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    losses = [loss for _, loss in cli.train_losses(out)]
    assert [s for s, _ in cli.train_losses(out)] == list(range(1, 41))
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5  # from ~2.7 nats to well below
    vals = [r for r in cli.metrics(out) if "val_loss" in r]
    assert [r["step"] for r in vals] == [10, 20, 30, 40]
    assert vals[-1]["val_loss"] < vals[0]["val_loss"]
    assert f"step 40: validation loss {vals[-1]['val_loss']:.4f}" in result.out
    assert f"loss curve: {out / 'loss.png'}" in result.out

    run = json.loads((out / "run.json").read_text())
    ckpt = out / "checkpoints" / "step-000040"
    model = load_model(ckpt)
    assert run["model"] == model.config.to_dict()
    assert run["model"]["vocab_size"] == model.tokenizer.vocab_size == 5 + len(set(LM_CHARS))
    assert (run["task"], run["preset"], run["tokenizer"]) == ("lm", "tiny", "char")
    assert run["train"]["steps"] == 40 and run["train"]["seed"] == 3
    assert run["model"]["d_model"] == 32 and run["model"]["max_len"] == 16


LM_CHARS = "the cat sat on the mat.\n"


def test_lm_run_prints_the_sample_generate_gives(lm_run):
    out, result = lm_run
    model = load_model(out / "checkpoints" / "step-000040")
    text = generate_text(model, model.tokenizer, "", max_new_tokens=10, temperature=0.8, seed=3)
    assert f"sample (temperature 0.8, seed 3):\n{text}\n" in result.out


def test_every_task_trains_its_family(cli, task_runs):
    expect = {
        "mlm": ("EncoderMLM", "tiny-encoder", {"val_loss", "val_perplexity"}),
        "seq2seq": ("EncoderDecoder", "tiny-seq2seq", {"val_loss", "val_exact_match"}),
        "classify": ("EncoderClassifier", "tiny-encoder", {"val_loss", "val_accuracy"}),
    }
    for task, (arch, preset, keys) in expect.items():
        out = task_runs[task]
        run = json.loads((out / "run.json").read_text())
        assert (run["task"], run["preset"]) == (task, preset)
        config = json.loads((out / "checkpoints" / "step-000020" / "config.json").read_text())
        assert config["architecture"] == arch
        last = [r for r in cli.metrics(out) if "val_loss" in r][-1]
        assert last["step"] == 20 and keys <= set(last)
        losses = [loss for _, loss in cli.train_losses(out)]
        assert min(losses[-5:]) < losses[0], task
    classifier = load_model(task_runs["classify"] / "checkpoints" / "step-000020")
    assert classifier.config.n_classes == 2
    assert classifier.config.extra["labels"] == list(load_dataset("is_sorted").labels)


def test_config_file_then_set_then_flags(tmp_path):
    config = tmp_path / "my.toml"
    config.write_text(
        '[run]\ndata = "reverse"\n[model]\nd_model = 48\nn_head = 4\n'
        "[train]\nlr = 0.01\nsteps = 5\n[data]\nnum_examples = 300\n"
    )
    argv = ["train", "--config", str(config), "--set", "train.lr=2e-2"]
    argv += ["--set", "model.d_model=64", "--steps", "7", "--seed", "9"]
    args = build_parser().parse_args(argv)
    settings, builtin = gather_settings(args)
    assert builtin is None
    plan = make_plan(settings)
    assert (plan.task, plan.data, plan.validation, plan.preset) == (
        "seq2seq",
        "reverse",
        "reverse",
        "tiny-seq2seq",
    )
    assert (plan.train.lr, plan.train.steps, plan.train.seed) == (2e-2, 7, 9)
    assert plan.model_overrides == {"d_model": 64, "n_head": 4}
    assert plan.data_options == {"num_examples": 300}
    assert str(plan.out) == "runs/reverse-seq2seq-char"


def test_no_arguments_is_the_builtin_demo():
    settings, builtin = gather_settings(build_parser().parse_args(["train"]))
    assert builtin == "shakespeare-char" and settings == load_config("shakespeare-char")
    plan = make_plan(settings)
    assert (plan.task, plan.data, plan.validation) == ("lm", "shakespeare", "shakespeare")
    assert (plan.tokenizer, plan.preset, plan.model_overrides["max_len"]) == ("char", "tiny", 64)
    assert str(plan.out) == "runs/shakespeare-char"
    assert plan.sample.temperature == 0.8 and plan.sample.max_new_tokens == 300
    # --set and --steps adjust the demo; it stays the demo
    args = build_parser().parse_args(["train", "--steps", "5", "--set", "train.lr=1e-3"])
    settings, builtin = gather_settings(args)
    assert builtin == "shakespeare-char"
    assert make_plan(settings).train.lr == 1e-3 and make_plan(settings).train.steps == 5


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", 64),
        ("1e-3", 1e-3),
        ("0.5", 0.5),
        ("true", True),
        ('"a b"', "a b"),
        ("[1, 2]", [1, 2]),
        ("null", None),
        ("swiglu", "swiglu"),
        ("runs/x", "runs/x"),
    ],
)
def test_set_values_are_toml_then_json_then_text(text, value):
    assert parse_value(text) == value


def test_demo_smoke(cli, tmp_path):
    """The demo's own path (Shakespeare, char, tiny, context 64) for 2 steps."""
    out = tmp_path / "demo"
    result = cli.run(
        "train", "--steps", "2", "--out", out, "--set", "train.eval_batches=1",
        "--set", "sample.max_new_tokens=40",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.startswith("glassformer: built-in config 'shakespeare-char'")
    assert 'data = "shakespeare"' in result.out and "max_len = 64" in result.out
    val = [r for r in cli.metrics(out) if "val_loss" in r][-1]["val_loss"]
    assert f"step 2: validation loss {val:.4f}" in result.out
    assert "sample (temperature 0.8, seed 1337):\n" in result.out
    assert (out / "loss.png").is_file()
    assert json.loads((out / "run.json").read_text())["model"]["max_len"] == 64
