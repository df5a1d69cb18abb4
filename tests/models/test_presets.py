"""Every preset builds, runs forward and backward, and gives finite gradients everywhere."""

import pytest
import torch

from glassformer.models import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM
from glassformer.presets import PRESETS, preset

BIG = {"gpt2", "bert-base", "vaswani-base"}


def build_and_step(name):
    cfg = preset(name)
    x = torch.randint(5, cfg.vocab_size, (2, 8))
    if cfg.family == "decoder":
        models = [DecoderLM(cfg)]
        runs = [lambda m: m(x, labels=x)]
    elif cfg.family == "encoder":
        models = [EncoderMLM(cfg), EncoderClassifier(cfg)]
        runs = [lambda m: m(x, labels=x), lambda m: m(x, labels=torch.tensor([0, 1]))]
    else:
        models = [EncoderDecoder(cfg)]
        runs = [lambda m: m(x, labels=x)]
    for model, run in zip(models, runs, strict=True):
        loss = run(model).loss
        assert torch.isfinite(loss)
        loss.backward()
        for pname, p in model.named_parameters():
            assert p.grad is not None, f"{name}: no gradient reaches {pname}"
            assert torch.isfinite(p.grad).all(), pname


@pytest.mark.parametrize("name", sorted(set(PRESETS) - BIG))
def test_small_preset_forward_backward(name):
    build_and_step(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BIG))
def test_big_preset_forward_backward(name):
    build_and_step(name)


def test_a_models_config_extra_is_its_own_not_the_presets():
    classifier = EncoderClassifier(preset("tiny-encoder", n_classes=3))
    classifier.config.extra["labels"] = ["neg", "neu", "pos"]
    assert "labels" not in preset("tiny-encoder").extra
    assert "labels" not in PRESETS["tiny-encoder"].extra
    copied = classifier.config.replace(n_classes=3)
    copied.extra["labels"].append("other")
    assert classifier.config.extra["labels"] == ["neg", "neu", "pos"]
