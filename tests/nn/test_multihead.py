"""MultiHeadAttention: Eq. (4)/(5) projections, heads, GQA, cross-attention, KV cache."""

import math

import pytest
import torch

from glassformer.nn import KVCache, MultiHeadAttention, RotaryEmbedding, padding_mask

torch.manual_seed(0)


def by_hand(mha, x, z, mask=None):
    """Concat_i softmax(X W_i^Q (Z W_i^K)ᵀ/√D + b) Z W_i^V, then W^O: one head at a time."""
    (wq, bq), (wk, bk), (wv, bv) = mha.projection_weights()
    d, g = mha.head_dim, mha.n_head // mha.n_kv_head
    heads = []
    for i in range(mha.n_head):
        j = i // g  # the key/value head this query head shares
        q = x @ wq[i * d : (i + 1) * d].T + bq[i * d : (i + 1) * d]
        k = z @ wk[j * d : (j + 1) * d].T + bk[j * d : (j + 1) * d]
        v = z @ wv[j * d : (j + 1) * d].T + bv[j * d : (j + 1) * d]
        a = q @ k.transpose(-1, -2) / math.sqrt(d)
        if mask is not None:
            a = a.masked_fill(~mask, float("-inf"))
        heads.append(a.softmax(-1) @ v)
    return mha.out_proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
@pytest.mark.parametrize("need_weights", [True, False])
def test_self_attention_matches_per_head_formula(n_kv_head, need_weights):
    mha = MultiHeadAttention(16, 4, n_kv_head=n_kv_head).double()
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    out = mha(x, need_weights=need_weights)
    y, w = out if need_weights else (out, None)  # the output alone unless A is asked for
    torch.testing.assert_close(y, by_hand(mha, x, x))
    assert isinstance(out, tuple) == need_weights
    if need_weights:
        assert w.shape == (3, 4, 5, 5)


def test_cross_attention_takes_keys_and_values_from_z():
    mha = MultiHeadAttention(16, 4).double()
    x, z = torch.randn(2, 3, 16, dtype=torch.float64), torch.randn(2, 6, 16, dtype=torch.float64)
    mask = padding_mask(torch.tensor([6, 2]))[:, 0]  # (B, 1, S) for the by-hand broadcast
    y, w = mha(x, z, mask[:, None], need_weights=True)
    torch.testing.assert_close(y, by_hand(mha, x, z, mask))
    assert w.shape == (2, 4, 3, 6) and torch.all(w[1, :, :, 2:] == 0)


def test_no_bias_has_no_bias_parameters():
    mha = MultiHeadAttention(8, 2, bias=False)
    assert all(getattr(mha, p).bias is None for p in ("q_proj", "k_proj", "v_proj", "out_proj"))
    assert sum(p.numel() for p in mha.parameters()) == 3 * 8 * 8 + 8 * 8


def test_gqa_parameter_count():
    mha = MultiHeadAttention(32, 8, n_kv_head=2, bias=False)
    assert mha.q_proj.weight.shape == (32, 32)  # Q: 8 heads of 4
    assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (8, 32)  # K, V: 2 heads of 4


def test_self_attention_is_permutation_equivariant():
    mha = MultiHeadAttention(16, 4).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    perm = torch.randperm(6)
    torch.testing.assert_close(mha(x[:, perm]), mha(x)[:, perm])


@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("max_len", [None, 12])
def test_kv_cache_decoding_equals_full_recompute(rotary, max_len):
    mha = MultiHeadAttention(16, 4, n_kv_head=2).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    rope = RotaryEmbedding(4, 16) if rotary else None
    tables = rope.rotary(torch.arange(9)) if rotary else None
    full = mha(x, causal=True, rope=tables)
    cache = KVCache(max_len)
    steps = [(0, 4), (4, 5), (5, 9)]  # a prompt, one token, then a chunk
    outs = []
    for a, b in steps:
        t = rope.rotary(torch.arange(a, b)) if rotary else None
        outs.append(mha(x[:, a:b], causal=True, rope=t, cache=cache))
    assert cache.length == 9
    torch.testing.assert_close(torch.cat(outs, dim=1), full)


def test_cross_attention_cache_computes_source_once():
    mha = MultiHeadAttention(16, 4).double()
    x, z = torch.randn(2, 3, 16, dtype=torch.float64), torch.randn(2, 5, 16, dtype=torch.float64)
    cache = KVCache()
    first = mha(x, z, cache=cache)
    keys = cache.keys
    again = mha(x, torch.zeros_like(z), cache=cache)  # z is not read again
    torch.testing.assert_close(again, first)
    assert cache.keys is not None and torch.equal(cache.keys, keys) and cache.length == 5


def test_cache_overflow_and_reorder():
    cache = KVCache(max_len=3)
    k = torch.arange(2 * 1 * 2 * 1, dtype=torch.float32).view(2, 1, 2, 1)
    cache.append(k, k)
    with pytest.raises(ValueError, match="exceed max_len=3"):
        cache.append(k, k)
    cache.reorder(torch.tensor([1, 1, 0]))
    assert cache.keys[:, 0, :, 0].tolist() == [[2, 3], [2, 3], [0, 1]]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(d_model=10, n_head=4), ["d_model=10", "n_head=4", "divisible"]),
        (dict(d_model=16, n_head=4, n_kv_head=3), ["n_head=4", "n_kv_head=3", "divisible"]),
        (dict(d_model=16, n_head=0), ["n_head=0"]),
        (dict(d_model=16, n_head=4, dropout=1.5), ["dropout", "1.5"]),
    ],
)
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError) as err:
        MultiHeadAttention(**kwargs)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    "args, kwargs, words",
    [
        ((0, 1), {}, "MultiHeadAttention: d_model=0 is not allowed: a positive int"),
        ((-4, 2), {}, "MultiHeadAttention: d_model=-4 is not allowed: a positive int"),
        ((8.0, 2), {}, "MultiHeadAttention: d_model=8.0 is not allowed: a positive int"),
        ((8, True), {}, "MultiHeadAttention: n_head=True is not allowed: a positive int"),
        ((8, 2), {"n_kv_head": 0}, "MultiHeadAttention: n_kv_head=0 is not allowed"),
        ((8, 2), {"dropout": -0.1}, "dropout=-0.1 is not allowed: a number in [0, 1)"),
        ((10, 4), {}, "allowed n_head: the divisors of 10"),
    ],
)
def test_constructor_arguments_are_refused_by_name(args, kwargs, words):
    with pytest.raises(ValueError) as err:
        MultiHeadAttention(*args, **kwargs)
    assert words in str(err.value)


@pytest.mark.parametrize(
    "x, z, mask, words",
    [
        ((5, 8), None, None, "x must be (B, T, C) with C = d_model = 8; got shape (5, 8)"),
        ((2, 5, 6), None, None, "x must be (B, T, C) with C = d_model = 8; got shape (2, 5, 6)"),
        ((2, 5, 8), (2, 3, 6), None, "z must be (B, S, C) with B = 2 (x's batch) and C = "),
        ((2, 5, 8), (3, 4, 8), None, "C = d_model = 8; got shape (3, 4, 8)"),
        ((2, 5, 8), (4, 8), None, "got shape (4, 8)"),
        (
            (2, 5, 8),
            None,
            torch.ones(3, 3, dtype=torch.bool),
            "mask of shape (3, 3) does not broadcast to (B, H, T, S) = (2, 2, 5, 5)",
        ),
        (
            (2, 5, 8),
            (2, 4, 8),
            torch.ones(2, 1, 1, 5, dtype=torch.bool),
            "mask of shape (2, 1, 1, 5) does not broadcast to (B, H, T, S) = (2, 2, 5, 4)",
        ),
        (
            (2, 5, 8),
            None,
            torch.ones(1, 1, 1, 5, 5, dtype=torch.bool),
            "mask of shape (1, 1, 1, 5, 5) does not broadcast",
        ),
        ((2, 5, 8), None, torch.ones(5, 5, dtype=torch.long), "mask dtype torch.int64 is not"),
    ],
)
def test_inputs_of_the_wrong_shape_are_refused_with_the_expected_shape(x, z, mask, words):
    """The mistakes glassformer.nn.attention explains, explained by MultiHeadAttention too."""
    mha = MultiHeadAttention(8, 2)
    z = None if z is None else torch.randn(z)
    with pytest.raises(ValueError) as err:
        mha(torch.randn(x), z, mask)
    assert str(err.value).startswith("MultiHeadAttention: ") and words in str(err.value)
    y = mha(torch.randn(2, 5, 8), mask=torch.ones(5, 5, dtype=torch.bool))
    assert y.shape == (2, 5, 8)  # (T, S) broadcasts: allowed
