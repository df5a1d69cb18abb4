"""Hugging Face checkpoint directories: load, convert, save in glassformer's format, load back,
export again; and the refusals (missing directory, unsupported class, no transformers).

Directories are written by transformers' own ``save_pretrained`` (config.json + safetensors)
from small random models; nothing is downloaded.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

from glassformer import load_model  # noqa: E402
from glassformer.interop.huggingface import (  # noqa: E402
    SUPPORTED,
    from_huggingface,
    from_huggingface_dir,
    huggingface_key_map,
    to_huggingface,
)
from glassformer.interop.huggingface.folder_checks import WeightsNote  # noqa: E402
from glassformer.models import DecoderLM, GlassformerModel  # noqa: E402
from glassformer.models.config import ModelConfig  # noqa: E402

transformers.logging.set_verbosity_error()
V = 64


def small(name: str):
    """A small random model of each supported family."""
    torch.manual_seed(0)
    if name == "gpt2":
        c = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=V, n_positions=16)
        c.bos_token_id = c.eos_token_id = 2
        return transformers.GPT2LMHeadModel(c).eval()
    if name == "bert":
        c = transformers.BertConfig(
            num_hidden_layers=2,
            hidden_size=32,
            num_attention_heads=4,
            intermediate_size=48,
            vocab_size=V,
            max_position_embeddings=16,
        )
        return transformers.BertForMaskedLM(c).eval()
    if name == "bart":
        c = transformers.BartConfig(
            encoder_layers=1,
            decoder_layers=1,
            d_model=32,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=48,
            decoder_ffn_dim=48,
            vocab_size=V,
            max_position_embeddings=16,
        )
        return transformers.BartForConditionalGeneration(c).eval()
    c = transformers.LlamaConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=48,
        vocab_size=V,
        max_position_embeddings=16,
    )
    return transformers.LlamaForCausalLM(c).eval()


IDS = torch.randint(3, V, (2, 6), generator=torch.Generator().manual_seed(1))


def logits(model) -> torch.Tensor:
    """Logits of either library's model on IDS (BART: IDS as source and target)."""
    with torch.no_grad():
        if isinstance(model, GlassformerModel):
            extra = (None, IDS) if model.family == "encoder-decoder" else ()
            return model(IDS, *extra).logits
        if model.config.is_encoder_decoder:
            return model(input_ids=IDS, decoder_input_ids=IDS).logits
        return model(IDS).logits


@pytest.mark.parametrize("name", ["gpt2", "bert", "bart", "llama"])
def test_directory_written_by_hf_loads_with_the_same_logits(tmp_path, name):
    hf = small(name)
    hf.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    model = from_huggingface_dir(tmp_path).eval()
    assert model.config.extra["converted_from"] == type(hf).__name__
    torch.testing.assert_close(logits(model), logits(hf), atol=1e-4, rtol=0)


def test_readme_example(tmp_path):
    """HF directory -> glassformer -> glassformer checkpoint -> back -> HF directory."""
    small("gpt2").save_pretrained(tmp_path / "hf-gpt2")
    reference = logits(transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "hf-gpt2"))

    model = from_huggingface_dir(tmp_path / "hf-gpt2")  # GPT2LMHeadModel -> DecoderLM
    model.save_pretrained(tmp_path / "glass-gpt2")  # model.safetensors + config.json
    again = load_model(tmp_path / "glass-gpt2")  # or DecoderLM.from_pretrained(...)
    to_huggingface(again).save_pretrained(tmp_path / "hf-again")  # DecoderLM -> GPT2LMHeadModel

    assert isinstance(again, DecoderLM)
    assert again.config.extra["converted_from"] == "GPT2LMHeadModel"
    assert torch.equal(logits(again.eval()), logits(model.eval()))
    torch.testing.assert_close(logits(model), reference, atol=1e-4, rtol=0)
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "hf-again").eval()
    assert torch.equal(logits(back), reference)


def test_missing_directory_is_refused_without_a_download(tmp_path):
    with pytest.raises(ValueError, match="gpt2: not a Hugging Face model directory"):
        from_huggingface_dir(tmp_path / "gpt2")  # a hub name, but only local paths are read


def test_directory_without_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"{tmp_path}.*no config.json"):
        from_huggingface_dir(tmp_path)


def test_directory_without_weights_is_refused(tmp_path):
    small("gpt2").config.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=f"{tmp_path}: cannot load it as GPT2LMHeadModel"):
        from_huggingface_dir(tmp_path)


def test_unsupported_architecture_directory_is_refused(tmp_path):
    t5 = transformers.T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8)
    t5.architectures = ["T5ForConditionalGeneration"]
    t5.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"T5ForConditionalGeneration.*not supported; supported"):
        from_huggingface_dir(tmp_path)


def test_glassformer_checkpoint_is_pointed_to_load_model(tmp_path):
    DecoderLM(ModelConfig(vocab_size=V, d_model=32, n_layer=1)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="glassformer checkpoint.*load_model"):
        from_huggingface_dir(tmp_path)


def test_unsupported_class_is_refused():
    t5 = transformers.T5ForConditionalGeneration(
        transformers.T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=V)
    )
    with pytest.raises(ValueError, match="'T5ForConditionalGeneration' is not supported"):
        from_huggingface(t5)
    assert "GPT2LMHeadModel" in SUPPORTED and "LlamaForCausalLM" in SUPPORTED


def test_missing_transformers_names_the_extra(monkeypatch):
    model = DecoderLM(ModelConfig(vocab_size=V, d_model=32, n_layer=1))
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` now fails
    for call in (lambda: to_huggingface(model), lambda: from_huggingface(object())):
        with pytest.raises(ImportError, match=r"pip install glassformer\[test\]"):
            call()


def test_key_map_is_the_same_from_either_side():
    hf = small("gpt2")
    forward, backward = huggingface_key_map(hf), huggingface_key_map(from_huggingface(hf))
    assert forward == backward
    assert forward["blocks.1.attn.k_proj.weight"] == (
        "transformer.h.1.attn.c_attn.weight",
    )
    llama = huggingface_key_map(small("llama"))
    assert llama["blocks.0.mlp.fc1.weight"] == (
        "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.mlp.up_proj.weight",
    )


def test_config_json_written_by_hf_is_what_we_read(tmp_path):
    """The directory loader picks the class from config.json's ``architectures``."""
    small("bert").save_pretrained(tmp_path)
    meta = json.loads((tmp_path / "config.json").read_text())
    assert meta["architectures"] == ["BertForMaskedLM"]
    assert type(from_huggingface_dir(tmp_path)).__name__ == "EncoderMLM"
    with pytest.warns(WeightsNote, match=r"not used by BertModel .*'cls.predictions.bias'"):
        body = from_huggingface_dir(tmp_path, architecture="BertModel")
    assert type(body).__name__ == "EncoderModel"
    assert body.config.pooler is False  # the masked LM has no pooler: none made up


def test_a_weight_the_converter_does_not_know_is_never_dropped():
    hf = small("gpt2")
    hf.transformer.register_parameter("extra", torch.nn.Parameter(torch.zeros(3)))
    with pytest.raises(ValueError, match=r"tensors not read \['transformer.extra'\]"):
        from_huggingface(hf)
