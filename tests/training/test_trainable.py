"""set_what_trains: the settings of TrainConfig and ModelConfig.embeddings applied to a model
before its optimizer is built; the settings' own checks."""

import re

import pytest
import torch

from glassformer import EncoderClassifier, preset
from glassformer.training import TrainConfig, build_optimizer
from glassformer.training.trainable import add_run_lora, set_what_trains

SMALL = dict(vocab_size=30, d_model=16, n_head=2, n_layer=2, max_len=16)


def classifier(**overrides):
    torch.manual_seed(0)
    return EncoderClassifier(preset("tiny-encoder", **{**SMALL, **overrides}))


def trains(model):
    return sorted(n for n, p in model.named_parameters() if p.requires_grad)


def test_lora_on_a_classifier_trains_the_adapters_and_the_head():
    model = classifier()
    config = TrainConfig(task="classify", lora_rank=2)
    trained, total = set_what_trains(add_run_lora(model, config), config)
    names = trains(model)
    assert names == sorted(
        [f"blocks.{i}.attn.{p}.lora_{m}" for i in (0, 1)
         for p in ("q_proj", "v_proj")
         for m in "AB"] + ["classifier.bias", "classifier.weight"]
    )  # fmt: skip  (the default targets: W^Q and W^V)
    assert trained == 2 * 2 * (2 * 16 + 16 * 2) + 16 * 2 + 2
    assert total == sum(p.numel() for p in model.parameters())
    optimizer = build_optimizer(model, TrainConfig())
    held = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert held == {id(p) for p in model.parameters() if p.requires_grad}


def test_freeze_applies_after_lora_and_fixed_embeddings():
    model = classifier(embeddings="fixed")
    config = TrainConfig(task="classify", lora_rank=2, freeze=["classifier"])
    set_what_trains(add_run_lora(model, config), config)
    assert all("lora_" in n for n in trains(model))
    model = classifier(embeddings="fixed")
    set_what_trains(model, TrainConfig(task="classify", freeze=["blocks.0-1"]))
    assert {n.split(".")[0] for n in trains(model)} == {"ln_final", "classifier"}
    assert not model.embed.weight.requires_grad and not model.pos_embed.weight.requires_grad


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        (dict(lora_rank=-1), "lora_rank=-1 must be an int >= 0"),
        (dict(lora_rank=1.5), "lora_rank=1.5 must be an int"),
        (dict(lora_rank=True), "lora_rank=True must be an int"),
        (dict(lora_alpha=float("nan")), "lora_alpha=nan must be a finite number > 0"),
        (dict(lora_dropout=1.0), "lora_dropout=1.0 is over the limit: allowed a finite"),
        (dict(freeze="embed"), "freeze='embed' must be a list of module paths"),
        (dict(freeze=["blocks.*.*x"]), "is not a module path"),
        (dict(lora_rank=4, lora_targets=[]), "lora_rank=4 needs lora_targets"),
    ],
)
def test_train_config_refuses(settings, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        TrainConfig(**settings)
