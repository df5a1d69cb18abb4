"""Freezing parts by path: the patterns, the refusals, fixed embeddings, and a trained run in
which the frozen parts are bit-identical and hold no optimizer state."""

import pytest
import torch
from safetensors.torch import load_file

from glassformer import DecoderLM, EncoderDecoder, ModelConfig, preset
from glassformer.data import load_dataset
from glassformer.finetune import fix_embeddings, freeze, trainable_count
from glassformer.finetune.paths import ends_with, matches
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())
SMALL = dict(vocab_size=TOK.vocab_size, d_model=32, n_head=4, n_layer=4, max_len=32)


def lm(**overrides):
    torch.manual_seed(0)
    return DecoderLM(preset("tiny", **{**SMALL, **overrides}))


def frozen(model):
    return {name for name, p in model.named_parameters() if not p.requires_grad}


def test_patterns_name_segments_indices_ranges_and_stars():
    assert matches("blocks.0-5", "blocks.5") and not matches("blocks.0-5", "blocks.6")
    assert matches("blocks.*.attn", "blocks.3.attn")
    assert not matches("blocks.*.attn", "blocks.3.attn.in_proj")  # the whole path
    assert not matches("blocks.*.attn", "blocks.3.cross_attn")
    assert ends_with("attn.in_proj", "encoder.blocks.0.attn.in_proj")
    assert not ends_with("attn.in_proj", "decoder.blocks.0.cross_attn.in_proj")


def test_freeze_returns_the_parameters_it_froze():
    model = lm()
    names = freeze(model, ["embed", "blocks.1-2", "blocks.*.attn.out_proj"])
    assert names == sorted(frozen(model), key=list(dict(model.named_parameters())).index)
    assert names[0] == "embed.weight"
    blocks = {n.split(".")[1] for n in names if n.startswith("blocks.")}
    assert blocks == {"0", "1", "2", "3"}  # 1-2 whole, every block's out_proj
    assert "blocks.3.mlp.fc1.weight" not in names and "blocks.0.ln1.weight" not in names
    assert "blocks.0.attn.out_proj.weight" in names and "blocks.2.mlp.fc2.bias" in names
    assert "ln_final.weight" not in names


def test_a_pattern_naming_nothing_is_refused_with_the_parts_and_nothing_frozen():
    model = lm()
    with pytest.raises(ValueError) as err:
        freeze(model, ["embed", "blocks.9"], where="train.freeze")
    message = str(err.value)
    assert message.startswith("train.freeze: 'blocks.9' names no part of the DecoderLM")
    assert "blocks.0-3" in message and "ln_final" in message and "hook_" not in message
    assert "\n" not in message and not frozen(model)
    for bad, words in [
        ("blocks..attn", "is not a module path"),
        ("blocks.3-1", "empty range"),
        (7, "must be a string"),
    ]:
        with pytest.raises(ValueError, match=words):
            freeze(model, [bad])
    with pytest.raises(ValueError, match="must be a list"):
        freeze(model, "embed")


def test_fixed_embeddings_freeze_the_embeddings_and_a_tied_unembedding():
    model = lm()
    fix_embeddings(model)
    assert frozen(model) == {n for n, _ in model.named_parameters() if "embed" in n}
    assert not model.unembed.proj.weight.requires_grad  # tied: the same matrix
    untied = lm(tie_embeddings=False)
    fix_embeddings(untied)
    assert untied.unembed.proj.weight.requires_grad
    torch.manual_seed(0)
    seq2seq = EncoderDecoder(
        ModelConfig(family="encoder-decoder", vocab_size=20, d_model=16, n_head=2, n_layer=1)
    )
    names = fix_embeddings(seq2seq)
    assert {n.split(".")[0] for n in names} == {"encoder", "decoder"}
    assert all(".embed." in n or ".pos_embed." in n for n in names)


def run(tmp_path, **settings):
    config = TrainConfig(
        task="lm", steps=4, batch_size=4, warmup=1, eval_every=0, save_every=4, log_every=1,
        **settings,
    )  # fmt: skip
    model = lm(embeddings=settings.pop("embeddings", "learned"))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer = Trainer(model, TOK, TEXT, None, config, tmp_path, progress=False)
    trainer.fit()
    return trainer, before


def test_frozen_parts_stay_bit_identical_and_have_no_optimizer_state(tmp_path):
    trainer, before = run(tmp_path, freeze=["embed", "pos_embed", "blocks.0-1"])
    model = trainer.model
    names = frozen(model)
    assert names and trainer.trained == trainable_count(model)[0] < trainer.total
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]) == (name in names), name
    held = {id(p) for p in trainer.optimizer.state}
    params = dict(model.named_parameters())
    assert not any(id(params[n]) in held for n in names)
    saved = load_file(tmp_path / "checkpoints" / "step-000004" / "trainer.safetensors")
    stated = {k.split("/")[1] for k in saved if k.startswith("opt/")}
    assert stated == set(params) - names


def test_model_embeddings_fixed_keeps_the_embeddings(tmp_path):
    config = TrainConfig(task="lm", steps=3, batch_size=4, warmup=1, eval_every=0, save_every=0)
    model = lm(embeddings="fixed")
    embed = model.embed.weight.detach().clone()
    trainer = Trainer(model, TOK, TEXT, None, config, tmp_path, progress=False)
    trainer.fit()
    assert torch.equal(model.embed.weight, embed)
    assert not torch.equal(model.blocks[0].mlp.fc1.weight, lm().blocks[0].mlp.fc1.weight)


def test_nothing_left_to_train_is_refused(tmp_path):
    config = TrainConfig(task="lm", freeze=["embed", "pos_embed", "blocks", "ln_final"])
    with pytest.raises(ValueError, match="^nothing trains: train.freeze="):
        Trainer(lm(), TOK, TEXT, None, config, tmp_path, progress=False)
    assert not any(tmp_path.iterdir())
