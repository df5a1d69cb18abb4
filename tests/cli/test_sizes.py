"""Sizes on the command line that cannot work: a model too big for this machine (from
--set or from an edited config.json), a tokenizer.json larger than the model's vocabulary or
holding an id of 10**12. Each is refused before anything big is allocated: one line, exit
status 2, naming what to lower or which file is wrong."""

import json
import shutil

import pytest
import torch

from glassformer.models import DecoderLM
from glassformer.models.size import count_parameters
from glassformer.presets import preset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import Trainer

HUGE = ["--set", "model.n_layer=1000", "--set", "model.d_model=16384", "--set", "model.n_head=16"]


@pytest.fixture
def never_built(monkeypatch):
    """Building a DecoderLM fails the test, except on the meta device (no storage), where its
    size is measured: the refusal must come before any allocation."""
    build = DecoderLM.__init__

    def only_on_meta(self, config):
        if torch.get_default_device().type != "meta":
            raise AssertionError(f"a DecoderLM was built: {config}")
        build(self, config)

    monkeypatch.setattr(DecoderLM, "__init__", only_on_meta)


def test_a_model_too_big_to_train_here_is_refused_before_it_is_built(
    cli, lm_files, tmp_path, never_built
):
    out = tmp_path / "run"
    result = cli.run("train", "--data", lm_files[0], "--out", out, *cli.TINY, *HUGE)
    cli.assert_user_error(
        result,
        "model.n_layer=1000 and model.d_model=16384 give 3.2e12 parameters (",
        "to train in float32",
        "of memory available on this machine; lower model.n_layer or model.d_model",
    )
    assert not out.exists()


def test_the_check_counts_what_trains_and_the_optimizer_it_trains_with(
    cli, lm_files, tmp_path, monkeypatch
):
    """With room for 10 bytes a parameter, full training with AdamW (16 in float32: the
    weight, its gradient, m and v) is refused, while LoRA (a few adapters train) and SGD
    without momentum (8: no state) start."""
    from glassformer.models import budget

    wide = [*cli.TINY, "--set", "model.d_model=256", "--set", "model.n_head=4", "--steps", "1"]
    config = preset("tiny", vocab_size=64, d_model=256, n_layer=1, n_head=4, max_len=16)
    n = count_parameters(config, DecoderLM)
    monkeypatch.setattr(budget, "available_memory", lambda device=None: 10 * n)
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "full", *wide)
    cli.assert_user_error(result, "to train in float32: weights, gradients, AdamW's two moments")
    lora = ["--set", "train.lora_rank=2"]
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "lora", *wide, *lora)
    assert result.code == 0, result.err
    sgd = ["--set", "train.optimizer=sgd", "--set", "train.momentum=0"]
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "sgd", *wide, *sgd)
    assert result.code == 0, result.err


def test_out_of_memory_names_the_model_when_it_is_the_larger_part(
    cli, lm_files, tmp_path, monkeypatch
):
    """A 1.8M-parameter model (28 MiB to train) and a batch of 8 × 16 tokens (under 2 MiB of
    activations): lowering the batch would not help, so the message says the model's size."""

    def fit(self, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

    monkeypatch.setattr(Trainer, "fit", fit)
    argv = ["--set", "model.d_model=384", "--steps", "2"]
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "run", *cli.TINY, *argv)
    cli.assert_user_error(
        result,
        "out of memory (CUDA out of memory. Tried to allocate 20.00 MiB); the model is the "
        "larger part: model.n_layer=1 and model.d_model=384 give 1.8e6 parameters (",
        "lower model.n_layer or model.d_model",
    )
    assert "batch_size" not in result.err


@pytest.fixture
def lm_copy(lm_run, tmp_path):
    """A copy of the tiny trained LM's run folder, and its last checkpoint."""
    run = shutil.copytree(lm_run[0], tmp_path / "run")
    return run, run / "checkpoints" / "step-000040"


def test_a_config_edited_to_a_huge_model_is_refused_at_load(cli, lm_copy, never_built):
    _, ckpt = lm_copy
    meta = json.loads((ckpt / "config.json").read_text())
    meta["config"].update(vocab_size=2**24, d_model=2**16)  # 1.2e12 parameters: 4.2 TiB
    (ckpt / "config.json").write_text(json.dumps(meta))
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the")
    cli.assert_user_error(
        result, str(ckpt / "config.json"), "vocab_size=16777216 and d_model=65536 give 1.2e12"
    )


def test_a_tokenizer_larger_than_the_model_is_refused_by_every_command(cli, lm_copy, tmp_path):
    """The model has one embedding row per id of the tokenizer it was trained with; a
    tokenizer.json with more ids is refused at load, naming both sizes, by every command
    that loads the checkpoint and by --resume."""
    run, ckpt = lm_copy
    vocab = json.loads((ckpt / "config.json").read_text())["config"]["vocab_size"]
    big = CharTokenizer().train("the cat sat on the mat.\nxyzqwjkbdfghlpuv0123456789")
    assert big.vocab_size > vocab
    for folder in sorted((run / "checkpoints").iterdir()):
        big.save(folder / "tokenizer.json")
    words = [
        f"{ckpt / 'tokenizer.json'} has {big.vocab_size} tokens but the model's vocabulary "
        f"(vocab_size) is {vocab}; ids {vocab} .. {big.vocab_size - 1} have no embedding"
    ]
    text = ["--text", "the cat"]
    for argv in (
        ["generate", "--checkpoint", ckpt, "--prompt", "xyz"],
        ["trace", "--checkpoint", ckpt, *text],
        ["inspect", "--checkpoint", ckpt, *text, "--out", tmp_path / "pictures"],
    ):
        cli.assert_user_error(cli.run(*argv), *words)
    assert not (tmp_path / "pictures").exists()
    cli.assert_user_error(cli.run("train", "--out", run, "--resume", "--steps", "50"), *words)


def test_a_token_id_of_10_to_the_12_is_one_line(cli, lm_copy):
    _, ckpt = lm_copy
    data = json.loads((ckpt / "tokenizer.json").read_text())
    data["vocab"][max(data["vocab"], key=data["vocab"].get)] = 10**12
    (ckpt / "tokenizer.json").write_text(json.dumps(data))
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the")
    cli.assert_user_error(
        result, str(ckpt / "tokenizer.json"), "char vocab is missing ids", "id 1000000000000"
    )
