"""save_pretrained / from_pretrained: exact round trip, no pickle, clear refusals."""

import json
import pickle

import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer.models import (
    ARCHITECTURES,
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    GlassformerModel,
    load_model,
)
from glassformer.presets import preset
from glassformer.tokenizers import CharTokenizer

torch.manual_seed(0)
SMALL = dict(vocab_size=40, d_model=32, n_head=4, n_layer=2, max_len=16)
CASES = [
    (DecoderLM, "tiny"),
    (DecoderLM, "tiny-llama"),
    (EncoderMLM, "tiny-encoder"),
    (EncoderClassifier, "tiny-encoder"),
    (EncoderDecoder, "tiny-seq2seq"),
]


def run(model, x):
    if isinstance(model, EncoderDecoder):
        return model(x, decoder_input_ids=x).logits
    return model(x).logits


@pytest.mark.parametrize("cls, name", CASES)
def test_round_trip_is_bit_identical(tmp_path, cls, name):
    model = cls(preset(name, **SMALL, norm="batch" if cls is EncoderMLM else "layer")).eval()
    if cls is EncoderMLM:  # running statistics are part of the checkpoint
        model.train()(torch.randint(0, 40, (4, 8)))
        model.eval()
    model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    loaded = load_model(tmp_path)
    assert type(loaded) is cls and loaded.config == model.config
    x = torch.randint(0, 40, (2, 9))
    assert torch.equal(run(loaded.eval(), x), run(model, x))
    if model.config.tie_embeddings and hasattr(loaded, "unembed"):  # tying survives
        token = loaded.decoder.embed if cls is EncoderDecoder else loaded.embed
        assert loaded.unembed.proj.weight is token.weight


def test_a_wrapped_model_saves_as_the_class_it_wraps(tmp_path):
    """FSDP turns a model's class into a subclass of (FSDPModule, DecoderLM) named
    FSDPDecoderLM; its checkpoint must load in a process that never made that class."""
    from torch.distributed.fsdp import FSDPModule

    model = DecoderLM(preset("tiny", **SMALL))
    model.__class__ = type("FSDPDecoderLM", (FSDPModule, DecoderLM), {})
    assert model.architecture() == "DecoderLM" and "FSDPDecoderLM" not in ARCHITECTURES
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["architecture"] == "DecoderLM"
    assert type(load_model(tmp_path)) is DecoderLM


def test_tokenizer_is_saved_and_loaded_with_the_model(tmp_path):
    tok = CharTokenizer().train("to be or not to be")
    model = DecoderLM(preset("tiny", **{**SMALL, "vocab_size": tok.vocab_size}))
    model.tokenizer = tok
    model.save_pretrained(tmp_path)
    loaded = DecoderLM.from_pretrained(tmp_path)
    assert loaded.tokenizer.encode("not to be") == tok.encode("not to be")


def test_loading_as_the_wrong_class_is_refused(tmp_path):
    DecoderLM(preset("tiny", **SMALL)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="holds a model of class DecoderLM, not EncoderMLM"):
        EncoderMLM.from_pretrained(tmp_path)
    assert isinstance(GlassformerModel.from_pretrained(tmp_path), DecoderLM)


@pytest.fixture
def saved(tmp_path):
    DecoderLM(preset("tiny", **SMALL)).save_pretrained(tmp_path)
    return tmp_path


def test_truncated_weights_are_refused(saved):
    path = saved / "model.safetensors"
    data = path.read_bytes()
    for cut in (5, 100, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="model.safetensors"):
            load_model(saved)


def test_missing_files_are_named(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="model.safetensors: missing"):
        load_model(saved)
    (saved / "config.json").unlink()
    with pytest.raises(ValueError, match="config.json: missing"):
        load_model(saved)
    with pytest.raises(ValueError, match="not a checkpoint directory"):
        load_model(saved / "nope")


def test_config_that_does_not_match_the_weights(saved):
    meta = json.loads((saved / "config.json").read_text())
    meta["config"]["d_model"] = 64
    (saved / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="has shape .* the config needs"):
        load_model(saved)
    meta["config"]["d_model"] = 32
    meta["config"]["n_layer"] = 3
    (saved / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError) as err:
        load_model(saved)
    layer = sorted(k for k in load_file(saved / "model.safetensors") if k.startswith("blocks.1."))
    first = ", ".join(repr(k.replace("blocks.1.", "blocks.2.")) for k in layer[:5])
    assert str(err.value).endswith(  # how many, and the first few
        f"weights do not match the config: missing {len(layer)} [{first}, ...]"
    )


def test_wrong_dtype_is_refused(saved):
    model = DecoderLM(preset("tiny", **SMALL))
    tensors = {
        k: v.double() for k, v in model.state_dict().items() if k != "unembed.proj.weight"
    }
    save_file(tensors, saved / "model.safetensors")
    with pytest.raises(ValueError, match="dtype F64, the model needs torch.float32"):
        load_model(saved)


def test_a_pickle_renamed_as_a_checkpoint_is_never_unpickled(saved, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (saved / "model.safetensors").write_bytes(pickle.dumps(Evil()))
    torch.save({"x": torch.ones(2)}, saved / "other.pt")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_model(saved)
    assert not marker.exists()


@pytest.mark.parametrize(
    "change, words",
    [
        ({"config": {"d_model": 32, "bogus": 1}}, ["unknown model config keys", "bogus"]),
        ({"config": {"vocab_size": 10**12}}, ["vocab_size=1000000000000", "limit"]),
        ({"architecture": "Evil"}, ["architecture 'Evil' is not known"]),
        ({"format": "pickle"}, ["not a glassformer model config"]),
    ],
)
def test_hostile_configs_are_refused_before_building(saved, change, words):
    meta = json.loads((saved / "config.json").read_text())
    for key, value in change.items():
        if isinstance(value, dict):
            meta[key].update(value)
        else:
            meta[key] = value
    (saved / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError) as err:
        load_model(saved)
    assert "config.json" in str(err.value)
    for word in words:
        assert word in str(err.value)


def test_save_replaces_files_atomically(saved, monkeypatch):
    before = (saved / "model.safetensors").read_bytes()
    import glassformer.models.checkpoint as ckpt

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ckpt, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        DecoderLM(preset("tiny", **SMALL)).save_pretrained(saved)
    assert (saved / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in saved.iterdir()) == ["config.json", "model.safetensors"]


def test_a_config_too_big_for_this_machine_is_refused_before_building(saved, monkeypatch):
    """config.json edited to a 16M vocabulary × d_model 8192 (512 GiB): refused from the
    config, naming the settings, without building the model anywhere but on the meta device
    (no storage), where its size is measured."""
    import glassformer.models.budget as budget

    build = DecoderLM.__init__

    def only_on_meta(self, config):
        if torch.get_default_device().type != "meta":
            raise AssertionError("the model was built")
        build(self, config)

    monkeypatch.setattr(DecoderLM, "__init__", only_on_meta)
    monkeypatch.setattr(budget, "available_memory", lambda device: 16 << 30)
    meta = json.loads((saved / "config.json").read_text())
    meta["config"].update(vocab_size=2**24, d_model=8192, n_head=4)
    (saved / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError) as err:
        load_model(saved)
    message = str(err.value)
    assert message.startswith(f"{saved / 'config.json'}: vocab_size=16777216 and d_model=8192 ")
    assert "give 1.4e11 parameters (518.0 GiB in float32)" in message
    assert message.endswith(
        "16.0 GiB of memory available on this machine; lower vocab_size or d_model"
    )


def _with_tokenizer(tmp_path, model, text):
    tok = CharTokenizer().train(text)
    model.save_pretrained(tmp_path, tokenizer=tok)
    return tok


def test_a_tokenizer_larger_than_the_vocabulary_is_refused_at_load(tmp_path):
    """Ids past the embedding would fail at the first use; a smaller tokenizer (a padded
    vocabulary) is fine."""
    small = dict(SMALL, vocab_size=12)
    tok = _with_tokenizer(tmp_path / "lm", DecoderLM(preset("tiny", **small)), "abcdefghijkl")
    with pytest.raises(ValueError) as err:
        load_model(tmp_path / "lm")
    assert str(err.value) == (
        f"{tmp_path / 'lm' / 'tokenizer.json'} has {tok.vocab_size} tokens but the model's "
        f"vocabulary (vocab_size) is 12; ids 12 .. {tok.vocab_size - 1} have no embedding: use "
        "the tokenizer the model was trained with"
    )
    classifier = EncoderClassifier(preset("tiny-encoder", **small))
    _with_tokenizer(tmp_path / "cls", classifier, "abcdefghijkl")
    with pytest.raises(ValueError, match=r"vocabulary \(vocab_size\) is 12"):
        load_model(tmp_path / "cls")
    fits = _with_tokenizer(tmp_path / "ok", DecoderLM(preset("tiny", **SMALL)), "abc")
    assert (
        fits.vocab_size < 40 and load_model(tmp_path / "ok").tokenizer.vocab_size == fits.vocab_size
    )


def test_an_encoder_decoder_checks_its_target_vocabulary_too(tmp_path):
    config = preset("tiny-seq2seq", **SMALL, share_embeddings=False, tgt_vocab_size=12)
    tok = _with_tokenizer(tmp_path, EncoderDecoder(config), "abcdefghijkl")
    assert 12 < tok.vocab_size <= 40
    with pytest.raises(ValueError, match=r"vocabulary \(tgt_vocab_size\) is 12; ids 12 \.\. "):
        load_model(tmp_path)


def test_a_bad_tokenizer_file_is_named(saved):
    tok = CharTokenizer().train("abc")
    data = tok.to_dict()
    data["vocab"]["c"] = 10**12
    (saved / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"tokenizer.json: char vocab is missing ids \[7\]"):
        load_model(saved)


@pytest.mark.parametrize(
    ("values", "held"),
    [
        ([float("nan")] * 3, "holds 3 NaN values"),
        ([float("inf"), float("-inf")], "holds 2 infinite values"),
        ([float("nan"), float("inf")], "holds 1 NaN value and 1 infinite value"),
    ],
)
def test_weights_with_nan_or_inf_are_refused_naming_the_tensor(saved, values, held):
    path = saved / "model.safetensors"
    tensors = load_file(path)
    name = "blocks.1.attn.q_proj.weight"
    tensors[name].view(-1)[5 : 5 + len(values)] = torch.tensor(values)
    save_file(tensors, path, metadata={"format": "pt"})
    with pytest.raises(ValueError) as err:
        load_model(saved)
    assert str(err.value) == (
        f"{path}: tensor {name!r} {held}: the weights are damaged (a run that diverged, or a "
        "corrupted file); load another checkpoint or train again"
    )
    tensors[name].view(-1)[5 : 5 + len(values)] = 0.5  # finite again: loads
    save_file(tensors, path, metadata={"format": "pt"})
    assert load_model(saved).state_dict()[name].view(-1)[5] == 0.5


def test_finite_weights_whose_sum_overflows_are_accepted():
    from glassformer.models.checkpoint import check_finite

    big = torch.full((8,), 60000.0, dtype=torch.float16)  # each finite, the sum is inf in fp16
    assert not torch.isfinite(big.sum())
    check_finite(big, "big")
    big[3] = float("-inf")
    with pytest.raises(ValueError, match="big holds 1 infinite value: the weights are damaged"):
        check_finite(big, "big")
