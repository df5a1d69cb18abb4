"""Checkpoints written under the earlier module names load under today's names and give the
logits they gave then: the first layout (``decoder.layers.0.self_attn``, ``attn_norm``,
``ffn``, ``ff_norm``, ``cross_norm``, ``decoder.norm``; tests/models/data/legacy) and the
second, whose models held their parts in containers (``embed.token``, ``decoder.blocks``,
``head.unembed``, ``src_embed``; tests/models/data/legacy-containers)."""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from glassformer import ModelConfig, load_model
from glassformer.models import DecoderLM, EncoderDecoder, EncoderMLM
from glassformer.models.legacy_keys import current_names

LEGACY = Path(__file__).parent / "data" / "legacy"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())
CONTAINERS = Path(__file__).parent / "data" / "legacy-containers"
FAMILIES = {"decoder": DecoderLM, "encoder": EncoderMLM, "encoder-decoder": EncoderDecoder}


def logits(model, case: dict) -> torch.Tensor:
    """The logits for the case's input_ids (an encoder-decoder's decoder reads the first 4)."""
    ids = torch.tensor(case["input_ids"])
    with torch.no_grad():
        if isinstance(model, EncoderDecoder):
            return model(ids, decoder_input_ids=ids[:, :4]).logits
        return model(ids).logits


@pytest.mark.parametrize("family", ["decoder", "encoder", "encoder-decoder"])
def test_a_checkpoint_of_the_earlier_names_loads_and_gives_its_logits(family):
    with safe_open(LEGACY / family / "model.safetensors", framework="pt") as f:
        stored = list(f.keys())
    assert any(".layers.0.self_attn." in name for name in stored)  # the earlier layout
    model = load_model(LEGACY / family).eval()
    case = EXPECTED[family]
    assert model.config.norm_first is case["norm_first"]
    torch.testing.assert_close(logits(model, case), torch.tensor(case["logits"]), atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", ["decoder", "encoder", "classifier", "encoder-decoder"])
def test_a_checkpoint_of_the_container_names_loads_and_gives_its_logits(case):
    """The second layout, with BERT's token types, MLM transform and head bias, a classifier
    with a pooler, and an encoder-decoder that shares its embedding."""
    with safe_open(CONTAINERS / case / "model.safetensors", framework="pt") as f:
        stored = list(f.keys())
    assert any(name.startswith(("head.", "src_embed.", "decoder.blocks.")) for name in stored)
    model = load_model(CONTAINERS / case).eval()
    want = json.loads((CONTAINERS / "expected.json").read_text())[case]
    torch.testing.assert_close(logits(model, want), torch.tensor(want["logits"]), atol=1e-5, rtol=0)
    names = model.state_dict()
    assert "blocks.0.ln1.weight" in names or "encoder.blocks.0.ln1.weight" in names


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
    assert list(current_names(stored, "encoder-decoder")) == [
        "decoder.blocks.0.attn.in_proj.weight",
        "decoder.blocks.0.ln1.weight",
        "decoder.blocks.0.cross_attn.out_proj.bias",
        "decoder.blocks.0.ln2.bias",
        "decoder.blocks.0.mlp.fc1.weight",
        "decoder.blocks.0.ln3.weight",  # the feed-forward norm after cross-attention
        "encoder.blocks.1.ln2.bias",  # ... and without it
        "encoder.ln_final.weight",
        "encoder.ln_embed.weight",
        "embed.token.weight",  # not a name of an encoder-decoder: left as it is
        "transform_norm.weight",
        "decoder.blocks.1.ln3.weight",
    ]


def test_current_names_takes_the_parts_out_of_their_containers():
    decoder = ["embed.token.weight", "embed.pos.weight", "decoder.blocks.0.ln1.weight",
               "decoder.ln_final.bias", "head.unembed.proj.weight",
               "blocks.0.ln2.bias"]  # fmt: skip
    assert list(current_names(decoder, "decoder")) == [
        "embed.weight", "pos_embed.weight", "blocks.0.ln1.weight", "ln_final.bias",
        "unembed.proj.weight", "blocks.0.ln2.bias",
    ]  # fmt: skip
    encoder = ["embed.segment.weight", "embed.ln_embed.bias", "encoder.blocks.0.attn.in_proj.bias",
               "head.pooler.weight", "head.classifier.bias", "pooler.bias"]  # fmt: skip
    assert list(current_names(encoder, "encoder")) == [
        "token_type_embed.weight", "ln_embed.bias", "blocks.0.attn.in_proj.bias",
        "pooler.weight", "classifier.bias", "pooler.bias",
    ]  # fmt: skip
    seq2seq = ["src_embed.token.weight", "tgt_embed.pos.weight", "encoder.blocks.0.ln1.bias",
               "decoder.ln_final.weight", "head.unembed.proj.bias"]  # fmt: skip
    assert list(current_names(seq2seq, "encoder-decoder")) == [
        "encoder.embed.weight", "decoder.pos_embed.weight", "encoder.blocks.0.ln1.bias",
        "decoder.ln_final.weight", "unembed.proj.bias",
    ]  # fmt: skip


def test_a_checkpoint_with_a_tensor_under_both_names_is_refused(tmp_path):
    model = load_model(LEGACY / "decoder")
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["decoder.layers.0.attn_norm.weight"] = tensors["blocks.0.ln1.weight"].clone()
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(
        ValueError,
        match=r"model\.safetensors: tensors .* are both 'blocks\.0\.ln1\.weight'",
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
        match=r"config: unexpected 2 \['decoder\.layers\.0\.gate\.weight', "
        r"'stray\.cross_norm\.weight'\]",
    ):
        load_model(tmp_path)


def _fused(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The fused layout every earlier checkpoint has: each attention's projections stacked by
    rows into one ``in_proj`` ([W^Q; W^K; W^V], [W^{QK}; W^V] or [W^V])."""
    order = ("q_proj", "qk_proj", "k_proj", "v_proj")  # their rows in in_proj
    out, fused = {}, {}
    for name in sorted(tensors, key=lambda n: [order.index(p) if p in order else -1
                                               for p in n.split(".")]):  # fmt: skip
        attn, _, part = name.rpartition(".")[0].rpartition(".")
        if part in order:
            fused.setdefault(f"{attn}.in_proj.{name.rpartition('.')[2]}", []).append(tensors[name])
        else:
            out[name] = tensors[name]
    return {**out, **{name: torch.cat(parts) for name, parts in fused.items()}}


@pytest.mark.parametrize(
    ("family", "options"),
    [
        ("decoder", dict(n_kv_head=2, positional="rotary")),  # grouped-query: K, V of 2 heads
        ("decoder", dict(attention_scores="shared")),
        ("encoder", dict(attention_scores="dot")),
        ("encoder-decoder", dict()),  # cross-attention's in_proj too
    ],
)
def test_a_checkpoint_of_the_fused_in_proj_loads_bitwise(tmp_path, family, options):
    torch.manual_seed(0)
    config = ModelConfig(family=family, vocab_size=30, d_model=16, n_head=4, n_layer=2,
                         max_len=16, **options)  # fmt: skip
    model = FAMILIES[family](config).eval()
    model.save_pretrained(tmp_path)
    tensors = _fused(load_file(tmp_path / "model.safetensors"))
    assert any(".attn.in_proj.weight" in n for n in tensors)
    assert not any("q_proj" in n or "v_proj" in n for n in tensors)
    save_file(tensors, tmp_path / "model.safetensors")
    loaded = load_model(tmp_path).eval()
    for name, t in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], t), name
    ids = torch.randint(3, 30, (2, 7), generator=torch.Generator().manual_seed(1))
    assert torch.equal(logits(loaded, {"input_ids": ids}), logits(model, {"input_ids": ids}))


def test_a_fused_in_proj_of_other_rows_is_refused_naming_it(tmp_path):
    torch.manual_seed(0)
    config = ModelConfig(family="decoder", vocab_size=30, d_model=16, n_head=4, n_layer=1,
                         max_len=16)  # fmt: skip
    DecoderLM(config).save_pretrained(tmp_path)
    tensors = _fused(load_file(tmp_path / "model.safetensors"))
    tensors["blocks.0.attn.in_proj.weight"] = tensors["blocks.0.attn.in_proj.weight"][:40]
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=r"tensor 'blocks\.0\.attn\.in_proj\.weight' has shape "
                       r"\(40, 16\), the config's projections need 48 rows"):  # fmt: skip
        load_model(tmp_path)
