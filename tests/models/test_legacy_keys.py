"""Checkpoints written under the earlier module names (``decoder.layers.0.self_attn``,
``attn_norm``, ``ffn``, ``ff_norm``, ``cross_norm``, ``decoder.norm``) load under today's names
and give the logits they gave then (tests/models/data/legacy)."""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from glassformer.models import EncoderDecoder, load_model
from glassformer.models.legacy_keys import current_names

LEGACY = Path(__file__).parent / "data" / "legacy"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())


@pytest.mark.parametrize("family", ["decoder", "encoder", "encoder-decoder"])
def test_a_checkpoint_of_the_earlier_names_loads_and_gives_its_logits(family):
    with safe_open(LEGACY / family / "model.safetensors", framework="pt") as f:
        stored = list(f.keys())
    assert any(".layers.0.self_attn." in name for name in stored)  # the earlier layout
    model = load_model(LEGACY / family).eval()
    case = EXPECTED[family]
    assert model.config.norm_first is case["norm_first"]
    ids = torch.tensor(case["input_ids"])
    with torch.no_grad():
        if isinstance(model, EncoderDecoder):
            logits = model(ids, decoder_input_ids=ids[:, :4]).logits
        else:
            logits = model(ids).logits
    torch.testing.assert_close(logits, torch.tensor(case["logits"]), atol=1e-5, rtol=0)


def test_current_names_renames_each_earlier_name_and_keeps_todays():
    stored = [
        "decoder.layers.0.self_attn.in_proj.weight",
        "decoder.layers.0.attn_norm.weight",
        "decoder.layers.0.cross_attn.out_proj.bias",
        "decoder.layers.0.cross_norm.bias",
        "decoder.layers.0.ffn.fc1.weight",
        "decoder.layers.0.ff_norm.weight",
        "encoder.layers.1.ff_norm.bias",
        "encoder.norm.weight",
        "src_embed.norm.weight",
        "embed.token.weight",
        "head.transform_norm.weight",
        "decoder.blocks.1.ln3.weight",
    ]
    assert list(current_names(stored)) == [
        "decoder.blocks.0.attn.in_proj.weight",
        "decoder.blocks.0.ln1.weight",
        "decoder.blocks.0.cross_attn.out_proj.bias",
        "decoder.blocks.0.ln2.bias",
        "decoder.blocks.0.mlp.fc1.weight",
        "decoder.blocks.0.ln3.weight",  # the feed-forward norm after cross-attention
        "encoder.blocks.1.ln2.bias",  # ... and without it
        "encoder.ln_final.weight",
        "src_embed.ln_embed.weight",
        "embed.token.weight",
        "head.transform_norm.weight",
        "decoder.blocks.1.ln3.weight",
    ]


def test_a_checkpoint_with_a_tensor_under_both_names_is_refused(tmp_path):
    model = load_model(LEGACY / "decoder")
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["decoder.layers.0.attn_norm.weight"] = tensors["decoder.blocks.0.ln1.weight"].clone()
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(
        ValueError,
        match=r"model\.safetensors: tensors .* are both "
        r"'decoder\.blocks\.0\.ln1\.weight'",
    ):
        load_model(tmp_path)


def test_a_name_no_module_has_is_refused_as_the_file_spells_it(tmp_path):
    model = load_model(LEGACY / "encoder-decoder")
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["decoder.layers.0.gate.weight"] = torch.zeros(2)
    tensors["stray.cross_norm.weight"] = torch.zeros(2)
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(
        ValueError,
        match=r"unexpected \['decoder\.layers\.0\.gate\.weight', 'stray\.cross_norm\.weight'\]",
    ):
        load_model(tmp_path)
