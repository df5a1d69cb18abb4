"""The input-major weight layout used while decoding changes strides only: the same results, and
the model's own tensors are back in place afterwards."""

from __future__ import annotations

import torch

from glassformer.fast import layout
from glassformer.fast.layout import input_major_weights
from glassformer.generation import generate


def test_layout_is_restored_exactly(make_decoder):
    model = make_decoder(tie_embeddings=True)
    before = {
        name: (p.data_ptr(), p.stride(), p.detach().clone()) for name, p in model.named_parameters()
    }
    with input_major_weights(model):
        w = model.blocks[0].mlp.fc1.weight
        assert w.shape == (128, 32) and w.stride() == (1, 128)  # same shape, transposed storage
        tied = model.unembed.proj.weight
        assert tied is model.embed.weight and tied.stride() == (1, 64)  # re-laid once
    for name, p in model.named_parameters():
        ptr, stride, value = before[name]
        assert (p.data_ptr(), p.stride()) == (ptr, stride), name
        assert torch.equal(p, value), name


def test_layout_gives_the_same_generation(make_decoder, make_seq2seq, prompts, monkeypatch):
    relaid = []
    real = layout.input_major_weights
    monkeypatch.setattr(
        layout, "input_major_weights", lambda m, on: relaid.append(on) or real(m, on)
    )
    for model, inputs in ((make_decoder("rotary"), prompts), (make_seq2seq(), [[5, 6, 2], [7, 2]])):
        a = generate(
            model, inputs, max_new_tokens=layout.MIN_NEW_TOKENS, temperature=0, return_logits=True
        )
        model.use_fast_paths(False)
        b = generate(
            model, inputs, max_new_tokens=layout.MIN_NEW_TOKENS, temperature=0, return_logits=True
        )
        model.use_fast_paths(True)
        generate(model, inputs, max_new_tokens=layout.MIN_NEW_TOKENS - 1, temperature=0)
        assert a.tokens == b.tokens
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=0)
    assert relaid == [True, False, False] * 2  # fast paths on and long enough only
