"""A model's size from its config alone (models/size.py: the model built on the meta device)
and the memory check that uses it (models/budget.py, with machine.py's memory): counts checked
by hand, nothing allocated, the RNG untouched, and a model that cannot fit refused, naming the
settings to lower."""

import pytest
import torch

from glassformer import machine
from glassformer.machine import available_memory, format_bytes
from glassformer.models import DecoderLM, EncoderDecoder, EncoderModel
from glassformer.models import budget as budget_module
from glassformer.models.budget import (
    Training,
    check_memory,
    describe_size,
    dominant_settings,
    memory_bytes,
)
from glassformer.models.size import buffer_elements, count_parameters, parameter_parts
from glassformer.presets import preset


def gpt2_count(v: int, t: int, c: int, layers: int) -> int:
    """GPT-2's layout (learned positions, LayerNorm and biases, tied unembedding, d_ff = 4C):
    V·C + T·C + L·(12C² + 13C) + 2C."""
    return v * c + t * c + layers * (12 * c * c + 13 * c) + 2 * c


def test_a_gpt2_layout_is_counted_by_hand():
    """Per block: W^{QKV} 3C² + 3C, W^O C² + C, two LayerNorms 4C, fc1 4C² + 4C, fc2 4C² + C;
    the tied unembedding is the token embedding, counted once."""
    config = preset("tiny", vocab_size=50, max_len=8, d_model=16, n_head=4, n_layer=2)
    assert count_parameters(config, DecoderLM) == gpt2_count(50, 8, 16, 2) == 7520
    assert DecoderLM(config).num_parameters() == 7520  # the real model, built on the CPU
    parts = {"vocabulary": 800, "positions": 128, "blocks": 6592, "classes": 0, "other": 0}
    assert parameter_parts(config, "DecoderLM") == parts
    assert buffer_elements(config, DecoderLM) == 0
    # BatchNorm (an encoder's): γ and β as LayerNorm; running mean, variance, count are buffers
    encoder = config.replace(family="encoder", norm="batch")
    assert count_parameters(encoder, EncoderModel) == 7520  # the same stack, without a head
    assert buffer_elements(encoder, EncoderModel) == 5 * (16 + 16 + 1)


def test_a_llama_layout_is_counted_by_hand():
    """Untied unembedding 2·V·C; per block: W^{QKV} C·(C + 2·H_kv·D) with H_kv = 2, D = 4,
    W^O C², SwiGLU 3·C·d_ff, two RMSNorms 2C; a final RMSNorm C. Rotary cos and sin
    (max_len, D) are buffers."""
    config = preset("tiny-llama", vocab_size=50, max_len=8, d_model=16, n_head=4, n_kv_head=2)
    config = config.replace(n_layer=2, d_ff=24)
    block = 16 * (16 + 2 * 2 * 4) + 16 * 16 + 3 * 16 * 24 + 2 * 16
    assert count_parameters(config, DecoderLM) == 2 * 50 * 16 + 2 * block + 16 == 5520
    assert parameter_parts(config, DecoderLM)["vocabulary"] == 1600
    assert buffer_elements(config, DecoderLM) == 2 * 8 * 4


def test_the_parts_name_what_makes_a_model_big():
    """A 16M vocabulary is the vocabulary part; 64 blocks of d_model 4096 the blocks part;
    a learned table of 2²⁰ positions the positions part; 2²⁰ classes the classes part."""
    vocab = preset("tiny", vocab_size=2**24, d_model=8192, n_head=4)
    parts = parameter_parts(vocab, DecoderLM)
    assert parts["vocabulary"] == 2**24 * 8192 and max(parts, key=parts.get) == "vocabulary"
    deep = preset("tiny", n_layer=64, d_model=4096, n_head=16)
    parts = parameter_parts(deep, DecoderLM)
    assert parts["blocks"] == 64 * (12 * 4096**2 + 13 * 4096) + 2 * 4096
    assert max(parts, key=parts.get) == "blocks"
    long = preset("tiny-encoder", max_len=2**20, d_model=64)
    assert max(parameter_parts(long, "EncoderModel").items(), key=lambda kv: kv[1]) == (
        "positions",
        2**20 * 64,
    )
    classes = preset("tiny-encoder", n_classes=2**20)
    parts = parameter_parts(classes, "EncoderClassifier")
    assert parts["classes"] == 2**20 * 128 + 2**20 and max(parts, key=parts.get) == "classes"
    with pytest.raises(ValueError, match=r"architecture 'GPT' is not known; allowed \['Decoder"):
        count_parameters(vocab, "GPT")


def test_measuring_leaves_the_random_number_generator_alone(monkeypatch):
    """load_model measures a model before building it: a draw while measuring would change
    what a user who seeds, loads and samples gets. Even a constructor that draws from the
    CPU's generator leaves its state as it was."""
    build = DecoderLM.__init__

    def drawing(self, config):
        torch.rand(3, device="cpu")
        build(self, config)

    torch.manual_seed(0)
    state = torch.get_rng_state()
    count_parameters(preset("gpt2", n_layer=3), DecoderLM)
    monkeypatch.setattr(DecoderLM, "__init__", drawing)
    count_parameters(preset("gpt2", n_layer=5), DecoderLM)
    assert torch.equal(torch.get_rng_state(), state)


def test_memory_is_4_bytes_a_parameter_and_16_to_train():
    config = preset("gpt2")
    n = count_parameters(config, DecoderLM)
    assert memory_bytes(config, DecoderLM) == 4 * n  # learned positions: no tables
    assert memory_bytes(config, DecoderLM, training=True) == 16 * n
    assert memory_bytes(config, DecoderLM, training=True, shards=4) == 4 * n + 12 * n // 4
    seq2seq = preset("vaswani-base")  # two sinusoidal tables of (512, 512) float32
    n = count_parameters(seq2seq, EncoderDecoder)
    assert memory_bytes(seq2seq, EncoderDecoder) == 4 * n + 4 * 2 * 512 * 512


def test_training_memory_counts_the_optimizer_state_of_what_trains():
    """A gradient and the optimizer's state tensors for each parameter that trains; adapters'
    parameters added to the weights; the message says what was counted."""
    config = preset("gpt2")
    n = count_parameters(config, DecoderLM)
    assert memory_bytes(config, DecoderLM, training=Training()) == 16 * n  # AdamW: True
    sgd = Training(states=1, optimizer="SGD's momentum")
    assert memory_bytes(config, DecoderLM, training=sgd) == 4 * n + 8 * n
    assert memory_bytes(config, DecoderLM, training=Training(states=0, optimizer="")) == 8 * n
    lora = Training(trained=300_000, added=290_000)
    assert memory_bytes(config, DecoderLM, training=lora) == 4 * (n + 290_000) + 12 * 300_000
    text = describe_size(config, DecoderLM, training=lora)
    assert text.endswith("to train in float32: weights, gradients and AdamW's two moments of "
                         "the 300,000 that train)")  # fmt: skip
    text = describe_size(config, DecoderLM, training=Training(states=0, optimizer=""))
    assert text.endswith("to train in float32: weights, gradients)")


def test_an_impossible_model_is_refused_on_this_machine():
    """3.3e12 parameters (48 TiB to train) are counted without allocating any of them."""
    config = preset("tiny", n_layer=64, d_model=2**16, n_head=16)
    assert count_parameters(config, DecoderLM) == gpt2_count(256, 256, 2**16, 64)
    with pytest.raises(ValueError) as err:
        check_memory(config, DecoderLM, training=True)
    message = str(err.value)
    assert message.startswith("n_layer=64 and d_model=65536 give 3.3e12 parameters (")
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
        (dict(n_decoder_layer=64, d_model=4096), EncoderDecoder, ["n_decoder_layer=64"]),
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
    monkeypatch.setattr(machine, "available_ram", lambda: 64 << 30)
    config = preset("gpt2", n_layer=48, d_model=1600, n_head=25)  # GPT-2 XL: 1.6e9
    check_memory(config, DecoderLM, device="cpu", training=False)
    with pytest.raises(ValueError, match=r"more than the 1.0 GiB free on cuda:0; lower n_layer"):
        check_memory(config, DecoderLM, device=torch.device("cuda", 0), training=True)
    monkeypatch.setattr(machine, "available_ram", lambda: 2 << 30)  # not even the weights
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


def test_counting_loads_no_compiler():
    """Counting loads no TorchDynamo (seconds at the start of every command that loads a
    model): a small model is built on the CPU, a large one with learned positions on the meta
    device without its initial values. In a fresh process, so that nothing else has loaded it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from glassformer.models.size import count_parameters\n"
        "from glassformer.presets import preset\n"
        "from glassformer.models import EncoderDecoder\n"
        "one, two = preset('tiny-llama', vocab_size=50), preset('tiny-seq2seq', vocab_size=50)\n"
        "print(count_parameters(one, 'DecoderLM'), count_parameters(two, EncoderDecoder))\n"
        "print(count_parameters(preset('gpt2'), 'DecoderLM'))\n"
        "assert 'torch._dynamo' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    one, two = preset("tiny-llama", vocab_size=50), preset("tiny-seq2seq", vocab_size=50)
    expected = [DecoderLM(one).num_parameters(), EncoderDecoder(two).num_parameters()]
    expected.append(gpt2_count(50257, 1024, 768, 12))
    assert [int(n) for n in done.stdout.split()] == expected
