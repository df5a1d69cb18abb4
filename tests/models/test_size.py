"""A model's size from its config alone (models/size.py) and the memory check that uses it
(models/budget.py): the count equals the built model's, and a model that cannot fit is
refused, naming the settings to lower."""

import random

import pytest
import torch

from glassformer.models import ARCHITECTURES, DecoderLM, EncoderDecoder
from glassformer.models import budget as budget_module
from glassformer.models.budget import (
    available_memory,
    check_memory,
    dominant_settings,
    format_bytes,
    memory_bytes,
)
from glassformer.models.size import buffer_elements, count_parameters
from glassformer.presets import PRESETS, preset

FITS = [(name, arch) for name in PRESETS for arch, cls in ARCHITECTURES.items()]
FITS = [(name, arch) for name, arch in FITS if ARCHITECTURES[arch].family == PRESETS[name].family]
OPTIONS = {
    "norm": ["layer", "rms", "batch"],
    "positional": ["learned", "sinusoidal", "rotary", "none"],
    "activation": ["gelu", "swiglu"],
    "bias": [True, False],
    "tie_embeddings": [True, False],
    "norm_first": [True, False],
    "final_norm": [None, True, False],
    "embed_norm": [False, True],
    "head_bias": [False, True],
    "mlm_transform": [False, True],
    "pooler": [False, True],
    "n_kv_head": [None, 1, 2],  # grouped-query attention
    "type_vocab_size": [0, 3],
    "position_offset": [0, 2],
    "d_ff": [None, 24],
    "n_layer": [0, 1, 2],
}


@pytest.mark.parametrize("name, arch", FITS, ids=[f"{n}-{a}" for n, a in FITS])
def test_the_count_of_every_preset_is_the_built_models(name, arch):
    """Full-size presets (GPT-2 124M, BERT 110M, ...) built on the meta device: no memory."""
    with torch.device("meta"):
        model = ARCHITECTURES[arch](PRESETS[name])
    assert count_parameters(PRESETS[name], arch) == model.num_parameters()


@pytest.mark.parametrize("name, arch", FITS, ids=[f"{n}-{a}" for n, a in FITS])
def test_the_count_matches_across_options(name, arch):
    """Tied or not, GQA, every norm and positional kind, heads, cross-attention, separate
    source and target vocabularies: 12 random combinations per preset and class."""
    rng = random.Random(f"{name}-{arch}")
    for _ in range(12):
        kw = {k: rng.choice(v) for k, v in OPTIONS.items()}
        kw["mlm_transform"] = kw["mlm_transform"] and kw["activation"] != "swiglu"
        kw.update(vocab_size=37, d_model=16, n_head=4, max_len=12, n_classes=5)
        if PRESETS[name].family == "encoder-decoder":
            kw["n_decoder_layer"] = rng.choice([None, 1, 3])
            if rng.random() < 0.5:
                kw.update(share_embeddings=False, tgt_vocab_size=rng.choice([None, 29]))
        config = preset(name, **kw)
        with torch.device("meta"):
            model = ARCHITECTURES[arch](config)
        assert count_parameters(config, arch) == model.num_parameters(), kw
        buffers = sum(
            b.numel() for n, b in model.named_buffers() if n.endswith(("table", "cos", "sin"))
        )
        assert buffer_elements(config) == buffers, kw


def test_memory_is_4_bytes_a_parameter_and_16_to_train():
    config = preset("gpt2")
    n = count_parameters(config, DecoderLM)
    assert memory_bytes(config, DecoderLM) == 4 * n  # learned positions: no tables
    assert memory_bytes(config, DecoderLM, training=True) == 16 * n
    assert memory_bytes(config, DecoderLM, training=True, shards=4) == 4 * n + 12 * n // 4
    seq2seq = preset("vaswani-base")  # two sinusoidal tables of (512, 512) float32
    n = count_parameters(seq2seq, EncoderDecoder)
    assert memory_bytes(seq2seq, EncoderDecoder) == 4 * n + 4 * 2 * 512 * 512


def test_an_impossible_model_is_refused_on_this_machine():
    config = preset("tiny", n_layer=1024, d_model=2**16, n_head=16)  # 5e13 parameters
    with pytest.raises(ValueError) as err:
        check_memory(config, DecoderLM, training=True)
    message = str(err.value)
    assert message.startswith("n_layer=1024 and d_model=65536 give 5.3e13 parameters (")
    assert "to train in float32" in message and "of memory available on this machine" in message
    assert message.endswith("lower n_layer or d_model")
    check_memory(preset("tiny"), DecoderLM, training=True)  # 0.86M parameters fit anywhere
    have = available_memory()
    assert have is None or 0 < have < 2**50


@pytest.mark.parametrize(
    "overrides, arch, named",
    [
        (dict(vocab_size=2**24, d_model=8192), DecoderLM, ["vocab_size=16777216", "d_model=8192"]),
        (dict(max_len=2**20, d_model=1024), "EncoderDecoder", ["max_len=1048576", "d_model"]),
        (dict(n_classes=2**20, d_model=4096), "EncoderClassifier", ["n_classes=1048576"]),
        (dict(d_ff=2**18, d_model=2048), DecoderLM, ["n_layer=4", "d_model=2048", "d_ff=262144"]),
        (dict(n_decoder_layer=1000, d_model=2048), EncoderDecoder, ["n_decoder_layer=1000"]),
    ],
)
def test_the_message_names_the_settings_behind_the_size(monkeypatch, overrides, arch, named):
    monkeypatch.setattr(budget_module, "available_memory", lambda device: 8 << 30)
    family = {"EncoderClassifier": "tiny-encoder"}.get(arch, "tiny")
    if arch in ("EncoderDecoder", EncoderDecoder):
        family = "tiny-seq2seq"
    config = preset(family, **overrides)
    with pytest.raises(ValueError) as err:
        check_memory(config, arch)
    message = str(err.value)
    assert "more than the 8.0 GiB of memory available on this machine; lower " in message
    for word in named:
        assert word in message.split(" give ")[0]
    assert f"lower {dominant_settings(config, arch)[0]}" in message


def test_a_cuda_device_is_compared_with_its_free_memory(monkeypatch):
    """The weights are built on the CPU first (enough RAM), then trained on the GPU (too
    little free there): the message names the device."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 << 30, 80 << 30))
    monkeypatch.setattr(budget_module, "_available_ram", lambda: 64 << 30)
    config = preset("gpt2", n_layer=48, d_model=1600, n_head=25)  # GPT-2 XL: 1.6e9
    check_memory(config, DecoderLM, device="cpu", training=False)
    with pytest.raises(ValueError, match=r"more than the 1.0 GiB free on cuda:0; lower n_layer"):
        check_memory(config, DecoderLM, device=torch.device("cuda", 0), training=True)
    monkeypatch.setattr(budget_module, "_available_ram", lambda: 2 << 30)  # not even the weights
    with pytest.raises(ValueError, match="available on this machine"):
        check_memory(config, DecoderLM, device=torch.device("cuda", 0), training=True)


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 1023, 1536, 3 << 30, 2**60)] == [
        "0 B",
        "1023 B",
        "1.5 KiB",
        "3.0 GiB",
        "1024.0 PiB",
    ]


def test_converting_from_hugging_face_checks_room_for_the_copy(monkeypatch):
    transformers = pytest.importorskip("transformers")
    from glassformer import from_huggingface

    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=8)
    hf_model = transformers.GPT2LMHeadModel(config)
    assert from_huggingface(hf_model).num_parameters() == hf_model.num_parameters()
    monkeypatch.setattr(budget_module, "available_memory", lambda device: 1000)
    with pytest.raises(ValueError, match=r"more than the 1000 B of memory available on this"):
        from_huggingface(hf_model)
