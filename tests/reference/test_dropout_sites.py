"""Dropout sites in training mode, against the references under one fixed mask: Hugging Face
GPT-2 (``ff_dropout=0.0``) and torch.nn.TransformerEncoderLayer (``ff_dropout`` None).

Both sides run in training mode with their dropout rates at 0.3. ``F.dropout`` is replaced by
a deterministic one: the mask of a call depends only on the shape of its input and on how many
calls of that shape came before (the k-th (B, T, C) call of either model gets the same mask).
So the outputs and gradients agree exactly when both drop the same tensors in the same order.

GPT-2 drops the embedding sum, the attention weights, and each sub-layer's output (attention
and MLP c_proj), not the MLP's hidden layer; torch.nn drops each sub-layer's output
(dropout1, dropout2) and the hidden layer (dropout). A dropout GPT-2 never makes (torch.nn's
layout on GPT-2's weights) changes the logits.

HF runs its eager attention (the weights go through ``F.dropout``); glassformer's written-out
attention runs because a hook reads ``hook_pattern`` (a fused kernel draws its own mask).
torch.nn's layer runs the fused kernel, so its attention-weight dropout is 0 here.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from glassformer import load_model
from glassformer.interop import from_torch, torch_key_map
from glassformer.interop.huggingface import from_huggingface, to_huggingface
from glassformer.models import DecoderLM
from glassformer.models.config import ModelConfig
from glassformer.nn.feedforward import FeedForward
from glassformer.presets import preset

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()
P, V, T = 0.3, 64, 7


class FixedMasks:
    """A stand-in for ``F.dropout``: the mask of the k-th call on a tensor of shape s is drawn
    from a generator seeded by (s, k), so two models that drop the same tensors in the same
    order draw the same masks. ``calls`` counts the calls by shape."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()

    def __call__(self, x, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return x
        shape = tuple(x.shape)
        self.calls[shape] += 1
        seed = hash((shape, self.calls[shape])) % 2**31
        g = torch.Generator().manual_seed(seed)
        keep = torch.rand(shape, generator=g) >= p
        return x * keep.to(x.dtype) / (1 - p)


def gpt2_pair(ff_dropout):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=V, n_positions=16, bos_token_id=1,
        eos_token_id=2, resid_pdrop=P, embd_pdrop=P, attn_pdrop=P, attn_implementation="eager",
    )  # fmt: skip
    hf = transformers.GPT2LMHeadModel(config)
    model = from_huggingface(hf)
    assert model.config.ff_dropout == 0.0  # GPT-2's layout
    if ff_dropout != 0.0:  # the same weights with another layout
        config = model.config.replace(ff_dropout=ff_dropout)
        other = DecoderLM(config)
        other.load_state_dict(model.state_dict())
        model = other
    for block in model.blocks:  # run the written-out attention, whose weights F.dropout drops
        block.attn.hook_pattern.add_hook(lambda a, hook: None)
    return hf.train(), model.train()


def run_both(hf, model, monkeypatch):
    """(HF logits, glassformer logits, HF masks by shape, glassformer masks by shape), the
    gradients left in both models."""
    ids = torch.randint(3, V, (2, T), generator=torch.Generator().manual_seed(1))
    out = []
    for m in (hf, model):
        masks = FixedMasks()
        monkeypatch.setattr(F, "dropout", masks)
        logits = m(ids).logits
        F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).backward()
        monkeypatch.undo()
        out.append((logits, masks.calls))
    (ref, ref_calls), (got, calls) = out
    return ref, got, ref_calls, calls


def test_gpt2_layout_matches_hf_gpt2_in_training(monkeypatch):
    hf, model = gpt2_pair(ff_dropout=0.0)
    ref, got, ref_calls, calls = run_both(hf, model, monkeypatch)
    # embedding + 2 sub-layer outputs per layer, and the attention weights of each layer
    assert ref_calls == calls == {(2, T, 32): 5, (2, 4, T, T): 2}
    assert_close(got, ref, atol=1e-4, rtol=0)
    h = hf.transformer
    for mine, theirs in [  # GPT-2's Conv1D stores W as (in, out): transposed
        (model.embed.weight.grad, h.wte.weight.grad),
        (model.pos_embed.weight.grad, h.wpe.weight.grad),
        (model.blocks[0].mlp.fc1.weight.grad, h.h[0].mlp.c_fc.weight.grad.t()),
        (model.blocks[1].mlp.fc2.weight.grad, h.h[1].mlp.c_proj.weight.grad.t()),
        (model.blocks[0].attn.k_proj.weight.grad, h.h[0].attn.c_attn.weight.grad.t()[32:64]),
    ]:
        assert_close(mine, theirs, atol=1e-5, rtol=1e-4)


def test_hidden_dropout_is_a_site_gpt2_does_not_have(monkeypatch):
    """torch.nn's layout (ff_dropout None: = dropout) drops the hidden layer too: one more
    call per layer, on (B, T, d_ff), and logits far from GPT-2's."""
    hf, model = gpt2_pair(ff_dropout=None)
    assert model.blocks[0].mlp.dropout.p == P
    ref, got, ref_calls, calls = run_both(hf, model, monkeypatch)
    assert calls - ref_calls == {(2, T, 128): 2}
    assert (got - ref).abs().max() > 0.01


def test_gpt2_preset_drops_no_hidden_layer_and_the_default_keeps_torch_nn_layout():
    gpt2 = DecoderLM(preset("gpt2", n_layer=1, d_model=32, n_head=2, vocab_size=V))
    assert gpt2.config.ff_dropout == 0.0
    assert gpt2.blocks[0].mlp.dropout.p == 0.0
    assert gpt2.blocks[0].dropout.p == gpt2.blocks[0].attn.dropout == 0.1
    assert preset("bert-base").ff_dropout == 0.0  # BertIntermediate has no dropout
    vaswani = preset("vaswani-base")  # §5.4: sub-layer outputs and embedding sums only
    assert (vaswani.dropout, vaswani.attn_dropout, vaswani.ff_dropout) == (0.1, 0.0, 0.0)
    tiny = DecoderLM(preset("tiny", n_layer=1, dropout=0.2))
    assert tiny.config.ff_dropout is None
    assert tiny.blocks[0].mlp.dropout.p == tiny.blocks[0].dropout.p == 0.2


def test_torch_nn_layout_matches_transformer_encoder_layer_in_training(monkeypatch):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, P, batch_first=True)
    layer.self_attn.dropout = 0.0  # its fused kernel would draw its own mask
    adapter = from_torch(layer)
    block = adapter.module
    assert block.mlp.dropout.p == block.dropout.p == P  # ff_dropout None: = dropout
    x = torch.randn(2, T, 16, generator=torch.Generator().manual_seed(1))
    outs = []
    for m in (layer.train(), adapter.train()):
        masks = FixedMasks()
        monkeypatch.setattr(F, "dropout", masks)
        y = m(x)
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        monkeypatch.undo()
        outs.append((y, masks.calls))
    (ref, ref_calls), (got, calls) = outs
    # dropout1 and dropout2 on (B, T, C), dropout on the hidden layer (B, T, d_ff)
    assert ref_calls == calls == {(2, T, 16): 2, (2, T, 32): 1}
    assert_close(got, ref, atol=1e-5, rtol=0)
    params = dict(block.named_parameters())
    for t_name, g_names in torch_key_map(layer).items():  # in_proj: [q; k; v]_proj by rows
        theirs = dict(layer.named_parameters())[t_name].grad
        assert_close(torch.cat([params[g].grad for g in g_names]), theirs, atol=1e-5, rtol=0)


def hidden_rates(model) -> set[float]:
    return {m.dropout.p for m in model.modules() if isinstance(m, FeedForward)}


def test_hugging_face_conversions_take_the_hidden_site_from_the_config():
    """GPT-2, BERT and Llama have no dropout inside the MLP; BART's is activation_dropout,
    kept on the way back."""
    from .test_huggingface_io import small

    for name, rate in (("gpt2", 0.0), ("bert", 0.0), ("bart", 0.2), ("llama", 0.0)):
        hf = small(name)
        if name == "bart":
            hf.config.activation_dropout = 0.2
        model = from_huggingface(hf)
        assert (name, model.config.ff_dropout, hidden_rates(model)) == (name, rate, {rate})
        if name != "llama":
            assert model.config.dropout == 0.1  # resid_pdrop, hidden_dropout_prob, dropout
        back = to_huggingface(model)
        if name == "bart":
            assert (back.config.activation_dropout, back.config.dropout) == (0.2, 0.1)


def test_export_refuses_a_hidden_dropout_gpt2_and_bert_do_not_have():
    from .test_huggingface_io import small

    model = DecoderLM(ModelConfig(vocab_size=V, d_model=32, n_layer=1, dropout=0.1))
    with pytest.raises(ValueError) as err:
        to_huggingface(model, architecture="GPT2LMHeadModel")
    assert str(err.value).startswith(
        "GPT2LMHeadModel cannot express the glassformer option ff_dropout=None (= dropout=0.1):"
        " it has no dropout on the feed-forward's hidden layer (GPT-2 drops the MLP's output, "
        "resid_pdrop); it needs ff_dropout=0.0."
    )
    model.config = model.config.replace(ff_dropout=0.0)  # as the message says
    assert to_huggingface(model, architecture="GPT2LMHeadModel").config.resid_pdrop == 0.1
    bert = from_huggingface(small("bert"))
    bert.config = bert.config.replace(ff_dropout=0.05)
    with pytest.raises(ValueError, match=r"option ff_dropout=0\.05: .*hidden_dropout_prob"):
        to_huggingface(bert)


def test_checkpoints_keep_the_site_and_old_ones_load_with_torch_nn_layout(tmp_path):
    model = DecoderLM(preset("gpt2", n_layer=1, d_model=32, n_head=2, vocab_size=V, max_len=8))
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["config"]["ff_dropout"] == 0.0
    assert hidden_rates(load_model(tmp_path)) == {0.0}
    del saved["config"]["ff_dropout"]  # a checkpoint saved before the setting existed
    (tmp_path / "config.json").write_text(json.dumps(saved))
    old = load_model(tmp_path)
    assert old.config.ff_dropout is None
    assert hidden_rates(old) == {0.1}  # trained with the hidden layer dropped



def test_gpt2_embedding_dropout_of_its_own_matches_hf_in_training(monkeypatch):
    """GPT-2's embd_pdrop apart from resid_pdrop: embed_dropout, the same masks, the same
    logits; and back to Hugging Face with it."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=V, n_positions=16, resid_pdrop=P,
        embd_pdrop=0.1, attn_pdrop=P, attn_implementation="eager",
    )  # fmt: skip
    hf = transformers.GPT2LMHeadModel(config)
    model = from_huggingface(hf)
    assert (model.config.dropout, model.config.embed_dropout) == (P, 0.1)
    assert model.embed_dropout.p == 0.1 and model.blocks[0].dropout.p == P
    for block in model.blocks:
        block.attn.hook_pattern.add_hook(lambda a, hook: None)
    ref, got, ref_calls, calls = run_both(hf.train(), model.train(), monkeypatch)
    assert ref_calls == calls
    assert_close(got, ref, atol=1e-4, rtol=0)
    assert to_huggingface(model).config.embd_pdrop == 0.1
    config.embd_pdrop = P  # = resid_pdrop: one rate, as in every GPT-2 checkpoint
    assert from_huggingface(transformers.GPT2LMHeadModel(config)).config.embed_dropout is None


def test_bert_classifier_dropout_matches_hf_in_training(monkeypatch):
    """BertForSequenceClassification drops the pooled vector at classifier_dropout (None:
    hidden_dropout_prob): glassformer's classifier_dropout, the same masks and logits."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
        vocab_size=V, max_position_embeddings=16, hidden_dropout_prob=P,
        attention_probs_dropout_prob=P, classifier_dropout=0.1, num_labels=3,
        attn_implementation="eager",
    )  # fmt: skip
    hf = transformers.BertForSequenceClassification(config).train()
    model = from_huggingface(hf).train()
    assert (model.config.classifier_dropout, model.classifier_dropout.p) == (0.1, 0.1)
    for block in model.blocks:
        block.attn.hook_pattern.add_hook(lambda a, hook: None)
    ids = torch.randint(3, V, (2, T), generator=torch.Generator().manual_seed(1))
    out = []
    for m in (hf, model):
        masks = FixedMasks()
        monkeypatch.setattr(F, "dropout", masks)
        out.append((m(ids).logits, masks.calls))
        monkeypatch.undo()
    (ref, ref_calls), (got, calls) = out
    assert ref_calls == calls and calls[(2, 32)] == 1  # the pooled vector, once
    assert_close(got, ref, atol=1e-4, rtol=0)
    assert to_huggingface(model).config.classifier_dropout == 0.1
    model.config = model.config.replace(embed_dropout=0.05)
    with pytest.raises(ValueError) as err:
        to_huggingface(model)
    assert str(err.value).startswith(
        "BertForSequenceClassification cannot express the glassformer option embed_dropout=0.05 "
        "beside dropout=0.3: BERT drops them at hidden_dropout_prob; it needs embed_dropout=None"
    )
