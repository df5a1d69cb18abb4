"""Fuzzing the public API with hypothesis (derandomized: the same examples on every run,
bounded in number): masks and attention on arbitrary shapes and lengths, including length 0
and all-padding batches; model configs with arbitrary values; generation with arbitrary
sampling settings. Nothing may fail except with a documented ValueError, and no output may
hold NaN. (Tokenizers on arbitrary Unicode are fuzzed in tests/tokenizers/test_bpe.py.)"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glassformer import DecoderLM, preset
from glassformer.generation import GenerationConfig, generate
from glassformer.models.config import ModelConfig
from glassformer.nn import attention
from glassformer.nn.masks import causal_mask, combine_masks, padding_mask

FUZZ = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
FEW = settings(FUZZ, max_examples=40)  # generation: a model call per example
small = st.integers(0, 5)


@FUZZ
@given(
    b=small,
    h_kv=st.integers(1, 2),
    group=st.integers(1, 2),
    t=small,
    s=st.integers(1, 5),  # s = 0: test_attention_with_no_keys
    d=st.integers(1, 4),
    causal=st.booleans(),
    need_weights=st.booleans(),
    data=st.data(),
)
def test_attention_on_any_shape_is_finite_and_masked_rows_are_zero(
    b, h_kv, group, t, s, d, causal, need_weights, data
):
    gen = torch.Generator().manual_seed(b * 1000 + t * 100 + s * 10 + d)
    h = h_kv * group
    q = torch.randn(b, h, t, d, generator=gen)  # (B, H, T, D)
    k = torch.randn(b, h_kv, s, d, generator=gen)  # (B, H_kv, S, D)
    v = torch.randn(b, h_kv, s, d, generator=gen)
    lengths = torch.tensor(data.draw(st.lists(st.integers(0, s), min_size=b, max_size=b)))
    keys = padding_mask(lengths.long(), s) if b else torch.ones(0, 1, 1, s, dtype=torch.bool)
    if causal and s < t:  # documented: the queries are the last T of S positions
        with pytest.raises(ValueError, match="causal_mask"):
            attention(q, k, v, keys, causal=True, need_weights=need_weights)
        return
    out, weights = attention(q, k, v, keys, causal=causal, need_weights=need_weights)
    assert out.shape == (b, h, t, d)
    assert torch.isfinite(out).all()
    allowed = keys.expand(b, h, t, s)
    if causal:
        allowed = allowed & causal_mask(t, s)
    empty = ~allowed.any(-1)  # (B, H, T): nothing to attend to
    assert (out[empty] == 0).all()
    if weights is not None:
        assert torch.isfinite(weights).all() and (weights[~allowed] == 0).all()
        sums = weights.sum(-1)
        torch.testing.assert_close(sums[~empty], torch.ones_like(sums[~empty]))
    other, _ = attention(q, k, v, keys, causal=causal, need_weights=not need_weights)
    torch.testing.assert_close(out, other, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
def test_attention_with_no_keys(need_weights):
    q, k = torch.randn(2, 1, 3, 4), torch.randn(2, 1, 0, 4)  # (B, H, T, D), (B, H, S=0, D)
    keys = padding_mask(torch.tensor([0, 0]), 0)  # an all-padding batch of length 0
    out, _ = attention(q, k, k, keys, need_weights=need_weights)
    assert out.shape == (2, 1, 3, 4) and (out == 0).all()


@FUZZ
@given(lengths=st.lists(st.integers(0, 6), max_size=5), extra=st.integers(0, 3))
def test_padding_mask_marks_exactly_the_first_lengths_keys(lengths, extra):
    s = max(lengths, default=0) + extra
    mask = padding_mask(torch.tensor(lengths, dtype=torch.long), s)
    assert mask.shape == (len(lengths), 1, 1, s)
    assert mask.sum((1, 2, 3)).tolist() == lengths
    both = combine_masks(mask, None, causal_mask(s))
    assert both is not None and both.shape == (len(lengths), 1, s, s)


@FUZZ
@given(lengths=st.lists(st.integers(-5, -1), min_size=1, max_size=3))
def test_padding_mask_refuses_negative_lengths(lengths):
    with pytest.raises(ValueError, match="lengths must be >= 0"):
        padding_mask(torch.tensor(lengths))


FIELDS = [f.name for f in dataclasses.fields(ModelConfig)]
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@FUZZ
@given(changes=st.dictionaries(st.sampled_from([*FIELDS, "evil", "__class__"]), ANY_VALUE))
def test_model_config_from_any_values_is_valid_or_a_value_error(changes):
    base = preset("tiny").to_dict()
    try:
        config = ModelConfig.from_dict({**base, **changes})
    except ValueError as err:
        assert str(err)
        return
    # accepted: the sizes are sane, so building the model cannot allocate absurdly
    assert 0 < config.vocab_size <= 10**7 and 0 < config.d_model <= 10**6
    assert 0 < config.max_len <= 10**7 and config.d_model % config.n_head == 0
    assert all(math.isfinite(x) for x in (config.dropout, config.norm_eps, config.init_std))


V = 11


@pytest.fixture(scope="module")
def tiny_lm() -> DecoderLM:
    torch.manual_seed(0)
    return DecoderLM(preset("tiny", vocab_size=V, d_model=16, n_head=2, n_layer=1, max_len=12))


SETTINGS = {
    "max_new_tokens": st.integers(-2, 6),
    "temperature": st.one_of(st.floats(-2, 5), st.sampled_from([0.0, math.nan, math.inf])),
    "top_k": st.integers(-3, 20),
    "top_p": st.one_of(st.floats(-1, 2), st.just(math.nan)),
    "num_beams": st.integers(0, 3),
    "seed": st.integers(-5, 2**31),
    "use_cache": st.booleans(),
}
NEW_TOKENS = {"max_new_tokens": st.integers(1, 6)}  # prompt + new tokens fit max_len 12
SAMPLING = {  # every documented value in a range (num_beams 1)
    "temperature": st.one_of(st.just(0.0), st.floats(0.05, 5)),
    "top_k": st.integers(0, 20),
    "top_p": st.floats(0.01, 1.0),
    "seed": st.integers(0, 2**31),
    "use_cache": st.booleans(),
}
BEAMS = {"num_beams": st.integers(2, 3)}  # beam search takes no sampling settings
VALID = st.one_of(
    st.fixed_dictionaries(NEW_TOKENS, optional=SAMPLING),
    st.fixed_dictionaries({**NEW_TOKENS, **BEAMS}, optional={"use_cache": st.booleans()}),
)
PROMPTS = st.lists(st.lists(st.integers(3, V - 1), min_size=1, max_size=4), min_size=1, max_size=3)


def run_generation(model: DecoderLM, settings_: dict, prompt: list[list[int]]) -> None:
    width = max(map(len, prompt))
    ids = torch.tensor([[3] * (width - len(p)) + p for p in prompt])  # equal lengths
    config = GenerationConfig(**settings_)
    out = generate(model, ids, config)
    assert out.sequences.dtype == torch.long
    assert ((out.sequences >= 0) & (out.sequences < V)).all()
    assert all(1 <= len(tokens) <= config.max_new_tokens for tokens in out.tokens)
    assert all(0 <= x < V for tokens in out.tokens for x in tokens)


@FEW
@given(settings_=VALID, prompt=PROMPTS)
def test_generation_with_valid_settings_gives_valid_ids(tiny_lm, settings_, prompt):
    run_generation(tiny_lm, settings_, prompt)


@FEW
@given(settings_=st.fixed_dictionaries({}, optional=SETTINGS), prompt=PROMPTS)
def test_generation_with_any_settings_gives_valid_ids_or_a_value_error(tiny_lm, settings_, prompt):
    try:
        run_generation(tiny_lm, settings_, prompt)
    except ValueError as err:
        assert str(err)
