"""Every preset builds, runs forward and backward, and gives finite gradients everywhere."""

import math

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


SCALED = sorted(name for name, c in PRESETS.items() if c.embed_scale)


def test_the_presets_that_scale_embeddings_are_known():
    assert SCALED == ["tiny-seq2seq", "vaswani-base"]


@pytest.mark.parametrize("name", SCALED)
def test_untied_scaled_token_embeddings_start_as_large_as_the_sinusoids(name):
    """√d_model · W_e at init has RMS near 1 (W_e ~ N(0, 1/d_model)), beside the sinusoids'
    1/√2: the reason for the scale. Was 0.02 √d: 0.23 (d 128), 0.45 (d 512)."""
    torch.manual_seed(0)
    model = EncoderDecoder(preset(name, vocab_size=500, n_layer=1, tie_embeddings=False))
    assert model.unembed.proj.weight is not model.decoder.embed.weight
    for embed in (model.encoder.embed, model.decoder.embed):
        rms = (embed.weight * embed.multiplier).pow(2).mean().sqrt().item()
        assert 0.9 < rms < 1.1, (name, rms)
    d = model.config.d_model
    sinusoid = model.encoder.pos_embed.vectors(torch.arange(d)).pow(2).mean().sqrt().item()
    assert abs(sinusoid - 0.5**0.5) < 1e-3
    assert abs(model.unembed.proj.weight.std().item() - 0.02) < 2e-3  # W_u: init_std


def first_loss(model, vocab_size):
    x = torch.randint(3, vocab_size, (8, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return model.eval()(x, labels=x.roll(1, dims=1)).loss.item()


@pytest.mark.parametrize("name, vocab_size", [("tiny-seq2seq", 31), ("vaswani-base", 37000)])
@pytest.mark.parametrize("tied", [True, False])
def test_the_first_loss_of_a_scaled_embedding_is_near_ln_v(name, vocab_size, tied):
    """Tied (the presets), W_u = W_eᵀ: W_e keeps init_std, as an N(0, 1/d) draw would make
    the untrained model predict each position's input token (a first loss of 9.8 on
    tiny-seq2seq's 31 tokens, ln 31 = 3.4). Untied, W_e ~ N(0, 1/d) and W_u ~ N(0, init_std²)."""
    torch.manual_seed(0)
    config = preset(name, vocab_size=vocab_size, n_layer=1, dropout=0.0, tie_embeddings=tied)
    model = EncoderDecoder(config)
    assert (model.unembed.proj.weight is model.decoder.embed.weight) == tied
    want = 0.02 if tied else config.d_model**-0.5
    assert abs(model.decoder.embed.weight.std().item() - want) < 0.1 * want
    assert abs(first_loss(model, vocab_size) - math.log(vocab_size)) < 0.3
