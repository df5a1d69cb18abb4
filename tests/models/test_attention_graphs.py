"""A graph per layer through the models (Formal Algorithms for Transformers, "Transformers as
GNNs"): ModelConfig's attention_graph fields reach every block of every family, change what the
model computes as the graph says, survive a checkpoint, and leave the CPU fast paths exact."""

import json

import pytest
import torch

from glassformer import graphs as G
from glassformer import load_model
from glassformer.fast import fast_paths, packing
from glassformer.models import DecoderLM, EncoderDecoder, EncoderMLM, base
from glassformer.models.config import ModelConfig

SMALL = dict(vocab_size=40, d_model=32, n_head=4, max_len=24, init_std=0.2)


def test_each_family_builds_its_blocks_with_the_graphs_of_the_config():
    dec = DecoderLM(ModelConfig(**SMALL, n_layer=3, attention_graph="window:4*2,full"))
    assert [b.graph for b in dec.blocks] == [G.sliding_window(4)] * 2 + [None]
    enc = EncoderMLM(
        ModelConfig(**SMALL, family="encoder", n_layer=2, attention_graph=["full", "dilated:3:2"])
    )
    assert [b.graph for b in enc.blocks] == [None, G.dilated(3, 2)]
    s2s = EncoderDecoder(
        ModelConfig(
            **SMALL,
            family="encoder-decoder",
            n_layer=1,
            n_decoder_layer=2,
            attention_graph="window:5",
            decoder_attention_graph=[None, "window:3"],
            cross_attention_graph="window:2|global:0",
        )
    )
    assert [b.graph for b in s2s.encoder.blocks] == [G.sliding_window(5)]
    assert [b.graph for b in s2s.decoder.blocks] == [None, G.sliding_window(3)]
    cross = G.sliding_window(2) | G.global_tokens(0)
    assert [b.cross_graph for b in s2s.decoder.blocks] == [cross, cross]


def test_a_window_graph_makes_a_decoder_local():
    """With one causal window of 3, the last output depends on the last 3 tokens only; the
    same model with dense attention sees the first token too."""
    torch.manual_seed(0)
    dense = DecoderLM(ModelConfig(**SMALL, n_layer=1, positional="rotary")).eval()
    local = DecoderLM(dense.config.replace(attention_graph="window:3")).eval()
    local.load_state_dict(dense.state_dict())
    x = torch.randint(5, 40, (1, 10))
    y = x.clone()
    y[0, 0] = 4 if x[0, 0] != 4 else 5  # change the first token only
    with torch.no_grad():
        assert torch.equal(local(x).logits[0, -1], local(y).logits[0, -1])
        assert not torch.allclose(dense(x).logits[0, -1], dense(y).logits[0, -1])
        # and the window's last 3 tokens alone (rotary: relative positions) give the same
        torch.testing.assert_close(local(x[:, -3:]).logits[0, -1], local(x).logits[0, -1])


def test_an_attention_graph_object_is_kept_as_its_spec():
    cfg = ModelConfig(**SMALL, n_layer=2, attention_graph=[G.sliding_window(4), None])
    assert cfg.attention_graph == ["window:4", None]
    assert json.loads(cfg.to_json())["attention_graph"] == ["window:4", None]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(attention_graph="window:4*3"), ["attention_graph", "3 graphs for 2 layers"]),
        (dict(attention_graph="windw:4"), ["attention_graph", "unknown pattern 'windw'"]),
        (dict(attention_graph=7), ["attention_graph=7", "text, a list"]),
        (
            dict(attention_graph={"edges": [[0, 1], [1]], "num_nodes": 2}),
            ["attention_graph"],
        ),
        (
            dict(decoder_attention_graph="window:4"),
            ["decoder_attention_graph='window:4'", "family='encoder-decoder'", "attention_graph"],
        ),
        (
            dict(family="encoder", cross_attention_graph="full"),
            ["cross_attention_graph='full'", "family='encoder' has no cross-attention"],
        ),
        (
            dict(family="encoder-decoder", n_decoder_layer=3, cross_attention_graph=["full"] * 2),
            ["cross_attention_graph", "2 graphs for 3 layers"],
        ),
    ],
)
def test_a_bad_graph_field_is_refused_naming_it(kwargs, words):
    with pytest.raises(ValueError) as err:
        ModelConfig(**{**SMALL, "n_layer": 2, **kwargs})
    for word in words:
        assert word in str(err.value)


def test_from_dict_checks_the_graph_fields_type():
    with pytest.raises(ValueError, match=r"attention_graph=3\.5 must be an attention graph spec"):
        ModelConfig.from_dict({"attention_graph": 3.5})


def test_a_checkpoint_keeps_the_graphs(tmp_path):
    """config.json holds the specs (an edge-given graph as a JSON object); the loaded model has
    the same graphs per layer and computes the same outputs."""
    edges = {"edges": [[0, 1, 2, 3, 1], [1, 2, 3, 4, 0]], "num_nodes": 24}
    cfg = ModelConfig(
        **SMALL,
        family="encoder-decoder",
        n_layer=2,
        attention_graph=["window:3|global:0", edges],
        decoder_attention_graph="window:4*1,full",
        cross_attention_graph="window:2",
    )
    torch.manual_seed(0)
    model = EncoderDecoder(cfg).eval()
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())["config"]
    assert saved["attention_graph"] == ["window:3|global:0", edges]
    loaded = load_model(tmp_path).eval()
    assert loaded.config == cfg
    for a, b in zip(loaded.modules(), model.modules(), strict=True):
        assert getattr(a, "graph", None) == getattr(b, "graph", None)
        assert getattr(a, "cross_graph", None) == getattr(b, "cross_graph", None)
    assert [b.graph for b in loaded.decoder.blocks] == [G.sliding_window(4), None]
    src, tgt = torch.randint(5, 40, (2, 9)), torch.randint(5, 40, (2, 7))
    with torch.no_grad():
        assert torch.equal(
            loaded(src, decoder_input_ids=tgt).logits, model(src, decoder_input_ids=tgt).logits
        )


def test_the_fast_paths_agree_on_a_padded_batch_with_a_window_graph(monkeypatch):
    """The packed encoder (glassformer.fast.packing) runs attention on (B, T) with the graph:
    the same outputs at the real tokens as the plain path."""
    torch.manual_seed(0)
    cfg = ModelConfig(**SMALL, family="encoder", n_layer=2, attention_graph="window:3*1,full")
    model = EncoderMLM(cfg).eval()
    x = torch.randint(5, 40, (3, 12))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    ran = []
    monkeypatch.setattr(
        base, "packing_for", lambda *a: ran.append(packing.packing_for(*a)) or ran[-1]
    )
    with torch.no_grad():
        with fast_paths(model):
            fast = model(x, mask).logits
        assert len(ran) == 1 and isinstance(ran[0], packing.Packing)  # packed, once a pass
        plain = model(x, mask).logits  # the reference code: the model was never told
    real = mask.bool()
    torch.testing.assert_close(fast[real], plain[real], atol=1e-5, rtol=1e-5)
