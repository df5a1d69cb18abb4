"""Captured attention and residual stream of converted Hugging Face models equal what Hugging
Face reports itself (``output_attentions``, ``output_hidden_states``, eager attention).

HF's hidden_states[l] is the residual stream entering block l, i.e. glassformer's
``rec.states()[2 l]`` (two sub-layers per block); its last entry includes the final norm (GPT-2)
and equals ``rec.output().output``."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer.inspect import capture

transformers = pytest.importorskip("transformers")

from glassformer.interop.huggingface import from_huggingface  # noqa: E402

transformers.logging.set_verbosity_error()
TOL = dict(atol=1e-5, rtol=0.0)


def _jittered(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model.eval()


def test_gpt2_attention_and_stream_match_hugging_face():
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=32, attn_implementation="eager"
    )
    hf = _jittered(transformers.GPT2LMHeadModel(config))
    ours = from_huggingface(hf).eval()
    x = torch.randint(0, 64, (2, 9))
    with torch.no_grad():
        ref = hf(x, output_attentions=True, output_hidden_states=True)
        with capture(ours) as rec:
            ours(x)
    assert_close(rec.weights(), torch.stack(ref.attentions), **TOL)  # (L, B, H, T, T)
    states = rec.states()
    for layer in range(2):
        assert_close(states[2 * layer], ref.hidden_states[layer], **TOL)
    assert_close(rec.output().output, ref.hidden_states[-1], **TOL)  # after ln_f


def test_bert_attention_with_padding_matches_hugging_face():
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
        vocab_size=64, max_position_embeddings=32, attn_implementation="eager",
    )  # fmt: skip
    hf = _jittered(transformers.BertModel(config, add_pooling_layer=False))
    ours = from_huggingface(hf).eval()
    x = torch.randint(0, 64, (2, 8))
    mask = torch.ones_like(x)
    mask[1, 5:] = 0
    with torch.no_grad():
        ref = hf(x, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        with capture(ours) as rec:
            ours(x, mask)
    assert_close(rec.weights(), torch.stack(ref.attentions), **TOL)  # padded keys ≈ 0 in HF
    assert torch.all(rec.weights()[:, 1, :, :, 5:] == 0)  # exactly 0 here
    for layer in range(3):  # post-norm: the stream after each block's last norm
        assert_close(rec.states()[2 * layer], ref.hidden_states[layer], **TOL)
