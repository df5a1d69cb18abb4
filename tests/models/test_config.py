"""ModelConfig: validation with clear errors, JSON round trip, presets."""

import json

import pytest

from glassformer.models.checkpoint import read_config
from glassformer.models.config import ModelConfig
from glassformer.presets import PRESETS, preset


def test_json_round_trip_is_exact(tmp_path):
    cfg = preset("tiny-llama", vocab_size=100)
    path = tmp_path / "c.json"
    path.write_text(cfg.to_json())
    assert ModelConfig.from_json_file(path) == cfg
    assert json.loads(cfg.to_json())["n_kv_head"] == 2


def test_derived_sizes():
    cfg = ModelConfig(d_model=64, n_head=8, n_layer=3, family="encoder-decoder")
    assert (
        cfg.head_dim,
        cfg.resolved_n_kv_head,
        cfg.resolved_d_ff,
        cfg.resolved_n_decoder_layer,
    ) == (8, 8, 256, 3)
    assert cfg.resolved_tgt_vocab_size == cfg.vocab_size


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(family="rnn"), ["family='rnn'", "'encoder-decoder'"]),
        (dict(activation="tanh"), ["activation='tanh'", "'swiglu'"]),
        (dict(norm="group"), ["norm='group'", "'rms'"]),
        (dict(positional="alibi"), ["positional='alibi'", "'rotary'"]),
        (dict(pooling="max"), ["pooling='max'", "'mean'"]),
        (dict(d_model=100, n_head=3), ["d_model=100", "n_head=3"]),
        (dict(n_head=4, n_kv_head=3), ["n_head=4", "n_kv_head=3"]),
        (dict(vocab_size=10**12), ["vocab_size=1000000000000", "limit"]),
        (dict(vocab_size=0), ["vocab_size=0", ">= 1"]),
        (dict(max_len=-5), ["max_len=-5"]),
        (dict(dropout=1.0), ["dropout=1.0", "[0, 1)"]),
        (dict(pad_id=300), ["pad_id=300"]),
        (dict(norm_eps=0.0), ["norm_eps=0.0"]),
        (dict(d_model=12, n_head=4, positional="rotary"), ["even head size"]),
        (dict(tgt_vocab_size=50, share_embeddings=True), ["share_embeddings"]),
    ],
)
def test_invalid_values_are_refused_with_the_name_and_what_is_allowed(kwargs, words):
    with pytest.raises(ValueError) as err:
        ModelConfig(**kwargs)
    for word in words:
        assert word in str(err.value)


OTHER_NAMES = {
    "ff_dim": "d_ff",
    "kv_heads": "n_kv_head",
    "target_vocab_size": "tgt_vocab_size",
    "decoder_layers": "n_decoder_layer",
    "activation_dropout": "ff_dropout",  # BART's name
}


@pytest.mark.parametrize("name", OTHER_NAMES)
def test_one_name_per_field_the_other_spelling_is_refused(name, tmp_path):
    """ModelConfig(...), replace, from_dict and a config.json each name the field to use."""
    message = f"{name} is not a ModelConfig field; use {OTHER_NAMES[name]}"
    assert ModelConfig.OTHER_NAMES == OTHER_NAMES
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{name: 2})
    with pytest.raises(ValueError, match=message):
        ModelConfig().replace(**{name: 2})
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_dict({"d_model": 64, name: 2})
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**ModelConfig().to_dict(), name: 2}))
    with pytest.raises(ValueError, match=f"config.json: {message}"):
        ModelConfig.from_json_file(path)
    checkpoint = {"format": "glassformer-model", "architecture": "DecoderLM"}
    path.write_text(json.dumps({**checkpoint, "config": {name: 2}}))
    with pytest.raises(ValueError, match=f"config.json: {message}"):
        read_config(path)
    assert not hasattr(ModelConfig(), name)


def test_a_saved_config_loads_with_its_defaults_still_derived(tmp_path):
    """A config.json keeps None for a default (d_ff: 4 · d_model), so a config built from it
    with another d_model derives the default again."""
    saved = json.loads(preset("tiny", vocab_size=100).to_json())
    assert saved["d_ff"] is None and saved["n_kv_head"] is None
    cfg = ModelConfig.from_dict(saved)
    assert cfg == preset("tiny", vocab_size=100) and cfg.resolved_d_ff == 4 * 128
    assert cfg.replace(d_model=64).resolved_d_ff == 256


def test_from_dict_refuses_unknown_keys_and_wrong_types():
    with pytest.raises(ValueError, match=r"unknown model config keys \['d_modle'\]"):
        ModelConfig.from_dict({"d_modle": 64})
    with pytest.raises(ValueError, match="d_model='64'"):
        ModelConfig.from_dict({"d_model": "64"})
    with pytest.raises(ValueError, match="norm_first=1 must be true or false"):
        ModelConfig.from_dict({"norm_first": 1})
    with pytest.raises(ValueError, match="must be a JSON object"):
        ModelConfig.from_dict([1, 2])


def test_bad_json_file_names_the_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"config\.json \(a model config\) is not valid JSON"):
        ModelConfig.from_json_file(bad)
    with pytest.raises(ValueError, match="no such file"):
        ModelConfig.from_json_file(tmp_path / "missing.json")


def test_presets():
    assert {"tiny", "gpt2", "bert-base", "vaswani-base"} <= set(PRESETS)
    assert preset("tiny", vocab_size=65).vocab_size == 65
    assert PRESETS["tiny"].vocab_size == 256  # presets are not mutated by overrides
    with pytest.raises(ValueError, match="'gpt5' is not known"):
        preset("gpt5")
