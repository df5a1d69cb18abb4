"""ModelConfig.positional_layout: the notes' split sinusoid ("Brief Notes on Transformers",
Positional Encodings) chosen in the config, checked, saved in checkpoints, and the default for
a checkpoint written before the field existed."""

from __future__ import annotations

import json

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, ModelConfig, load_model
from glassformer.nn.sinusoid import sinusoid_table

SMALL = dict(vocab_size=20, d_model=16, n_head=2, n_layer=1, max_len=12)


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_the_model_adds_the_table_of_its_layout(layout):
    config = ModelConfig(**SMALL, positional="sinusoidal", positional_layout=layout)
    model = DecoderLM(config).eval()
    ids = torch.randint(0, 20, (2, 7))
    _, cache = model.run_with_cache(ids)
    want = sinusoid_table(12, 16, layout=layout).float()[:7]
    torch.testing.assert_close(cache["hook_pos_embed"][1], want, rtol=0, atol=0)


def test_encoder_decoder_uses_the_layout_in_both_stacks():
    config = ModelConfig(
        **SMALL, family="encoder-decoder", positional="sinusoidal", positional_layout="split"
    )
    model = EncoderDecoder(config)
    want = sinusoid_table(12, 16, layout="split").float()
    for side in (model.encoder, model.decoder):
        assert torch.equal(side.pos_embed.table, want)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(positional_layout="halves"), ["positional_layout='halves'", "'split'"]),
        (
            dict(positional="learned", positional_layout="split"),
            ["positional_layout='split'", "needs positional='sinusoidal'", "'learned'"],
        ),
        (
            dict(positional="rotary", positional_layout="split"),
            ["needs positional='sinusoidal'", "'rotary'"],
        ),
        (
            dict(positional="sinusoidal", positional_layout="split", d_model=15, n_head=3),
            ["positional_layout='split' needs an even d_model", "d_model=15"],
        ),
    ],
)
def test_a_layout_the_encoding_cannot_have_is_refused(kwargs, words):
    with pytest.raises(ValueError) as err:
        ModelConfig(**{**SMALL, **kwargs})
    for word in words:
        assert word in str(err.value)


def test_the_layout_is_saved_and_an_older_checkpoint_loads_interleaved(tmp_path):
    config = ModelConfig(**SMALL, positional="sinusoidal", positional_layout="split")
    model = DecoderLM(config).eval()
    model.save_pretrained(tmp_path / "split")
    saved = json.loads((tmp_path / "split" / "config.json").read_text())
    assert saved["config"]["positional_layout"] == "split"
    loaded = load_model(tmp_path / "split")
    assert loaded.config == config and loaded.config.positional_layout == "split"
    ids = torch.randint(0, 20, (1, 9))
    assert torch.equal(loaded(ids).logits, model(ids).logits)

    older = DecoderLM(config.replace(positional_layout="interleaved")).eval()
    older.save_pretrained(tmp_path / "older")
    path = tmp_path / "older" / "config.json"
    meta = json.loads(path.read_text())
    del meta["config"]["positional_layout"]  # as written before the field existed
    path.write_text(json.dumps(meta))
    loaded = load_model(tmp_path / "older")
    assert loaded.config.positional_layout == "interleaved"
    assert torch.equal(loaded(ids).logits, older(ids).logits)
