"""Decoder-only parity with Hugging Face: GPT2LMHeadModel and LlamaForCausalLM <-> DecoderLM.

Small random configs, every weight perturbed (norm gains and biases too, so a swapped norm or a
dropped bias shows), float32, eval mode; max |difference| <= 1e-4 for logits and for the last
hidden states. HF's ``hidden_states[-1]`` includes the final norm (GPT-2's ln_f, Llama's
model.norm), as glassformer's ``hidden_states`` does.

Padding: outputs at padded positions are not meaningful (glassformer zeroes a query row that
may attend to nothing, HF does not), so they are compared at real positions only.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

transformers = pytest.importorskip("transformers")

from glassformer.interop.huggingface import from_huggingface, to_huggingface  # noqa: E402
from glassformer.models import DecoderLM  # noqa: E402
from glassformer.models.config import ModelConfig  # noqa: E402
from glassformer.presets import preset  # noqa: E402

transformers.logging.set_verbosity_error()
TOL = dict(atol=1e-4, rtol=0.0)
V, T = 64, 9


def gpt2(**kw):
    cfg = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=V, n_positions=32)
    cfg.update(bos_token_id=1, eos_token_id=2)
    cfg.update(kw)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**cfg))


def llama(**kw):
    cfg = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2)
    cfg.update(intermediate_size=48, vocab_size=V, max_position_embeddings=32, rms_norm_eps=1e-5)
    cfg.update(rope_parameters={"rope_type": "default", "rope_theta": 500.0})
    cfg.update(kw)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg))


MODELS = {
    "gpt2": gpt2,
    "gpt2-untied-gelu": lambda: gpt2(tie_word_embeddings=False, activation_function="gelu"),
    "llama": llama,
    "llama-tied-mha": lambda: llama(tie_word_embeddings=True, num_key_value_heads=4),
}


def jitter(model):
    """Perturb every parameter, so no norm gain is 1 and no bias is 0."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.fixture(params=list(MODELS))
def pair(request):
    torch.manual_seed(0)
    hf = jitter(MODELS[request.param]())
    return hf, from_huggingface(hf).eval()


def batch(left: bool):
    """(ids (3, T), attention_mask (3, T)): one full row, two padded by 2 and 4 tokens."""
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, V, (3, T), generator=g)
    mask = torch.ones(3, T, dtype=torch.long)
    for row, n_pad in ((1, 2), (2, 4)):
        pad = slice(0, n_pad) if left else slice(T - n_pad, T)
        mask[row, pad] = 0
        ids[row, pad] = 0
    return ids, mask


def generate_positions(mask):
    """Position ids as transformers' generate computes them for a padded batch."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)


def test_logits_and_hidden_states_match_with_right_padding(pair):
    hf, model = pair
    ids, mask = batch(left=False)
    real = mask.bool()
    with torch.no_grad():
        ref = hf(ids, attention_mask=mask, output_hidden_states=True)
        out = model(ids, mask)
    assert_close(out.logits[real], ref.logits[real], **TOL)
    assert_close(out.hidden_states[real], ref.hidden_states[-1][real], **TOL)


def test_left_padding_matches_generate_position_ids(pair):
    """glassformer counts positions over real tokens (positions_from_mask); HF is given the
    position ids its generate() would compute. Unpadded, both also equal the plain call."""
    hf, model = pair
    ids, mask = batch(left=True)
    real = mask.bool()
    with torch.no_grad():
        ref = hf(
            ids,
            attention_mask=mask,
            position_ids=generate_positions(mask),
            output_hidden_states=True,
        )
        out = model(ids, mask)
        alone = hf(ids[2:, 4:]).logits[0]  # row 2 without its 4 pads
    assert_close(out.logits[real], ref.logits[real], **TOL)
    assert_close(out.hidden_states[real], ref.hidden_states[-1][real], **TOL)
    assert_close(out.logits[2, 4:], alone, **TOL)


def test_greedy_tokens_match_hf_generate(pair):
    hf, model = pair
    ids, mask = batch(left=True)
    with torch.no_grad():
        ref = hf.generate(
            ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0
        )
        seq, m = ids, mask
        for _ in range(6):  # full recompute each step: the plain definition of greedy decoding
            nxt = model(seq, m).logits[:, -1].argmax(-1, keepdim=True)
            seq, m = torch.cat([seq, nxt], 1), torch.cat([m, torch.ones_like(nxt)], 1)
    assert torch.equal(seq, ref)


def test_round_trip_gives_the_same_weights_and_outputs(pair):
    hf, model = pair
    back = to_huggingface(model).eval()
    assert type(back) is type(hf)
    want, got = hf.state_dict(), back.state_dict()
    assert want.keys() == got.keys()
    for k in want:
        assert torch.equal(got[k], want[k]), k
    ids, mask = batch(left=False)
    with torch.no_grad():
        assert torch.equal(
            back(ids, attention_mask=mask).logits, hf(ids, attention_mask=mask).logits
        )


def test_parameter_counts_agree(pair):
    hf, model = pair
    assert model.num_parameters() == hf.num_parameters()


def test_config_mapping_is_faithful():
    model = from_huggingface(llama(tie_word_embeddings=True))
    c = model.config
    assert (c.positional, c.norm, c.activation, c.bias) == ("rotary", "rms", "swiglu", False)
    assert (c.rope_base, c.n_kv_head, c.d_ff, c.tie_embeddings) == (500.0, 2, 48, True)
    assert c.extra["converted_from"] == "LlamaForCausalLM"
    c = from_huggingface(gpt2()).config
    assert (c.activation, c.norm_first, c.positional, c.max_len) == (
        "gelu_tanh",
        True,
        "learned",
        32,
    )


def test_dtype_and_mode_are_kept():
    hf = jitter(gpt2()).double()
    model = from_huggingface(hf)
    assert next(model.parameters()).dtype == torch.float64 and not model.training
    ids, mask = batch(left=False)
    with torch.no_grad():
        assert_close(
            model(ids, mask).logits[mask.bool()],
            hf(ids, attention_mask=mask).logits[mask.bool()],
            atol=1e-10,
            rtol=0,
        )
    assert from_huggingface(gpt2().train()).training


@pytest.mark.parametrize(
    "config, arch",
    [
        (
            ModelConfig(vocab_size=V, d_model=32, n_head=4, n_layer=2, activation="gelu_tanh"),
            "GPT2LMHeadModel",
        ),
        (
            preset("tiny-llama", vocab_size=V, d_model=32, n_head=4, n_layer=2, d_ff=40),
            "LlamaForCausalLM",
        ),
    ],
)
def test_native_glassformer_decoder_exports(config, arch):
    """A model built in glassformer (no HF origin) exports to the class its options match."""
    torch.manual_seed(3)
    model = DecoderLM(config).eval()
    hf = to_huggingface(model).eval()
    assert type(hf).__name__ == arch
    ids, mask = batch(left=False)
    with torch.no_grad():
        ref = hf(ids, attention_mask=mask, output_hidden_states=True)
        out = model(ids, mask)
    real = mask.bool()
    assert_close(out.logits[real], ref.logits[real], **TOL)
    assert hf.num_parameters() == model.num_parameters()


UNSUPPORTED = {
    "scale_attn_by_inverse_layer_idx": (gpt2, dict(scale_attn_by_inverse_layer_idx=True)),
    "reorder_and_upcast_attn": (gpt2, dict(reorder_and_upcast_attn=True)),
    "scale_attn_weights": (gpt2, dict(scale_attn_weights=False)),
    "activation_function": (gpt2, dict(activation_function="silu")),
    "rope_scaling": (llama, dict(rope_parameters={"rope_type": "linear", "factor": 2.0})),
    "attention_bias": (llama, dict(attention_bias=True)),
    "mlp_bias": (llama, dict(mlp_bias=True)),
    "head_dim": (llama, dict(head_dim=16)),
    "hidden_act": (llama, dict(hidden_act="gelu")),
}


@pytest.mark.parametrize("option", list(UNSUPPORTED))
def test_unsupported_hf_options_are_refused(option):
    build, kwargs = UNSUPPORTED[option]
    with pytest.raises(ValueError, match=f"{option}.*not supported; supported"):
        from_huggingface(build(**kwargs))


@pytest.mark.parametrize(
    "changes, arch, option",
    [
        (dict(norm="rms"), "GPT2LMHeadModel", "norm"),
        (dict(norm_first=False), "GPT2LMHeadModel", "norm_first"),
        (dict(positional="sinusoidal"), "GPT2LMHeadModel", "positional"),
        (dict(n_kv_head=2), "GPT2LMHeadModel", "n_kv_head"),
        (dict(activation="swiglu"), "GPT2LMHeadModel", "activation"),
        (dict(attention_graph="window:4"), "GPT2LMHeadModel", "attention_graph"),
        (dict(positional="rotary"), "LlamaForCausalLM", "norm"),
        (
            dict(positional="rotary", norm="rms", activation="swiglu", bias=False, dropout=0.1),
            "LlamaForCausalLM",
            "dropout",
        ),
    ],
)
def test_inexpressible_glassformer_options_are_refused(changes, arch, option):
    config = ModelConfig(vocab_size=V, d_model=32, n_head=4, n_layer=1).replace(**changes)
    with pytest.raises(ValueError, match=f"{arch}.*{option}"):
        to_huggingface(DecoderLM(config), architecture=arch)


def test_wrong_architecture_is_refused():
    with pytest.raises(ValueError, match="architecture='BertModel'"):
        to_huggingface(DecoderLM(ModelConfig(vocab_size=V, d_model=32)), architecture="BertModel")
