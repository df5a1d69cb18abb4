"""local_attention and edge_attention equal dense masked attention on the same graph, values and
gradients; the band keeps O(T) tensors for backward."""

import pytest
import torch

from glassformer.graphs.kernels.sparse import _split_shared, edge_attention, local_attention
from glassformer.nn.scaled_dot_product import attention


def qkv(b=2, h=4, h_kv=2, t=19, s=19, d=8, d_v=8, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(*shape, generator=g, dtype=dtype, requires_grad=True)
        for shape in ((b, h, t, d), (b, h_kv, s, d), (b, h_kv, s, d_v))
    )


def dense_mask(t, s, *, before, after, dilation=1, allows=None, q_pos=None, k_pos=None,
               key_mask=None, extras=None, rows=None, **_):  # fmt: skip
    """The T×S graph written out: band ∪ extras (∪ whole rows), ∩ allows, ∩ real keys."""
    i = (torch.arange(s - t, s) if q_pos is None else q_pos)[:, None]
    j = (torch.arange(s) if k_pos is None else k_pos)[None, :]
    gap = i - j
    cand = (gap >= -after) & (gap <= before) & (gap % dilation == 0)  # (T, S)
    if extras is not None:
        for n, ms in enumerate(extras.tolist()):
            for m in ms:
                if m >= 0:
                    cand[n, m] = True
    if rows is not None:
        cand[rows] = True
    if allows is not None:
        cand = cand & allows(i, j)
    km = torch.ones(1, s, dtype=torch.bool) if key_mask is None else key_mask
    return cand[None, None] & km[:, None, None, :]  # (B, 1, T, S)


def grads(out, inputs, seed=1):
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    return torch.autograd.grad(out, inputs, g)


def assert_matches_dense(q, k, v, atol=1e-10, rtol=1e-8, **kw):
    out = local_attention(q, k, v, **kw)
    mask = dense_mask(q.shape[2], k.shape[2], **kw)
    ref, _ = attention(q, k, v, mask)
    torch.testing.assert_close(out, ref, atol=atol, rtol=rtol)
    for got, want in zip(grads(out, (q, k, v)), grads(ref, (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)
    return out


def causal(w):
    return lambda i, j: (i >= j) & (i - j < w)


KEY_MASK = torch.ones(2, 19, dtype=torch.bool)
KEY_MASK[1, 13:] = False  # the second sequence has 13 real keys
EXTRAS = torch.tensor([[-1, 3, 17, 3], [0, 1, 2, -1]] * 9 + [[18, 5, -1, -1]])  # (19, 4)
GLOBAL = torch.tensor([0, 7])
EARLY_PADDING = torch.ones(2, 19, dtype=torch.bool)
EARLY_PADDING[0, :10] = False  # sequence 0: queries 0..9 find only padding in their band

CASES = {
    "window": dict(before=3, after=3),
    "window_block_4": dict(before=3, after=3, block=4),
    "causal_window": dict(before=3, after=0, allows=causal(4), block=4),
    "asymmetric": dict(before=1, after=5, block=5),
    "ahead_only": dict(before=-2, after=4, block=3),
    "dilated_2": dict(before=6, after=6, dilation=2, block=3),
    "dilated_3_causal": dict(before=9, after=0, dilation=3, allows=causal(10), block=2),
    "global_rows_and_columns": dict(
        before=2, after=2, rows=GLOBAL, extras=GLOBAL.expand(19, 2), block=4
    ),
    "random_extras": dict(before=2, after=2, extras=EXTRAS, block=4),
    "random_extras_dilated": dict(before=4, after=4, dilation=2, extras=EXTRAS, block=4),
    "padding": dict(before=4, after=4, key_mask=KEY_MASK, block=4),
    "everything": dict(
        before=4,
        after=0,
        allows=causal(5),
        key_mask=KEY_MASK,
        extras=EXTRAS,
        rows=GLOBAL,
        block=4,
    ),
    "shared_and_own_extras": dict(
        before=4,
        after=4,
        dilation=2,
        extras=torch.cat([GLOBAL.expand(19, 2), EXTRAS], dim=1),
        key_mask=KEY_MASK,
        rows=GLOBAL,
        block=3,
    ),
    "empty_band_with_extras": dict(
        before=2, after=0, key_mask=EARLY_PADDING, extras=EXTRAS, rows=GLOBAL, block=4
    ),
    "t_below_block": dict(before=2, after=2, block=64),
    "one_block_size_1": dict(before=2, after=1, block=1),
    "empty_rows": dict(before=3, after=3, allows=lambda i, j: (i % 4 != 1) & (j != 6), block=4),
}


@pytest.mark.parametrize("case", CASES)
def test_band_equals_dense_masked_attention(case):
    assert_matches_dense(*qkv(), **CASES[case])


@pytest.mark.parametrize("h, h_kv", [(4, 4), (4, 2), (4, 1)])
def test_grouped_query_heads(h, h_kv):
    assert_matches_dense(*qkv(h=h, h_kv=h_kv), before=3, after=2, extras=EXTRAS, block=4)


@pytest.mark.parametrize("h, h_kv", [(4, 2), (4, 1)])
def test_grouped_query_heads_with_shared_and_own_keys(h, h_kv):
    extras = torch.cat([GLOBAL.expand(19, 2), EXTRAS], dim=1)
    assert_matches_dense(*qkv(h=h, h_kv=h_kv), before=3, after=0, extras=extras, block=4)


def test_keys_every_query_lists_are_split_from_each_query_s_own():
    """Global columns run as one shared block of keys; the rest stay per query, the columns
    that count first."""
    ex = torch.cat([GLOBAL.expand(19, 2), EXTRAS.clamp(min=0)], dim=1)  # (19, 6)
    ok = torch.ones(2, 19, 6, dtype=torch.bool)
    ok[:, :, 2:] = EXTRAS >= 0
    own, own_ok, shared, shared_ok = _split_shared(ex, ok)
    assert shared.tolist() == [0, 7] and shared_ok.all()
    assert own.shape == (19, 3) and own_ok.shape == (2, 19, 3)  # rows list at most 3 keys
    for n in range(19):
        kept = sorted(own[n][own_ok[0, n]].tolist())
        assert kept == sorted(m for m in EXTRAS[n].tolist() if m >= 0 and m not in (0, 7))


@pytest.mark.parametrize("t", [1, 3])
def test_queries_are_the_last_keys_as_with_a_kv_cache(t):
    q, k, v = qkv(t=t, s=20)
    kw = dict(before=4, after=0, allows=causal(5))
    assert_matches_dense(q, k, v, **kw)
    assert_matches_dense(q, k, v, dilation=2, extras=torch.randint(-1, 20, (t, 2)), **kw)


def test_explicit_positions_with_an_offset():
    q, k, v = qkv(t=6, s=15)
    kw = dict(before=3, after=1, q_pos=torch.arange(104, 110), k_pos=torch.arange(100, 115))
    assert_matches_dense(q, k, v, block=4, **kw)
    assert_matches_dense(q, k, v, dilation=2, block=2, **kw)


def test_value_size_differs_from_key_size():
    out = assert_matches_dense(*qkv(d=8, d_v=5), before=2, after=2, extras=EXTRAS, block=4)
    assert out.shape == (2, 4, 19, 5)


def test_float32_within_1e_5():
    assert_matches_dense(
        *qkv(dtype=torch.float32), before=3, after=3, extras=EXTRAS, atol=1e-5, rtol=1e-5
    )


def test_a_query_with_nothing_to_attend_gets_zeros_and_finite_gradients():
    q, k, v = qkv()
    km = torch.ones(2, 19, dtype=torch.bool)
    km[0, :10] = False  # the first queries of sequence 0 see only padding in their band
    assert_matches_dense(q, k, v, before=3, after=0, key_mask=km, block=4)
    out = local_attention(q, k, v, before=3, after=0, key_mask=km, block=4)
    assert torch.all(out[0, :, :10] == 0)
    assert all(g.isfinite().all() for g in grads(out, (q, k, v)))


def test_bfloat16_runs_close_to_float32():
    q, k, v = qkv(dtype=torch.bfloat16)
    out = local_attention(q, k, v, before=3, after=3)
    ref = local_attention(*(x.float() for x in (q, k, v)), before=3, after=3)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
    assert all(g.dtype == torch.bfloat16 and g.isfinite().all() for g in grads(out, (q, k, v)))


def test_dropout_drops_weights_and_follows_the_seed():
    q, k, v = qkv()
    kw = dict(before=3, after=3, extras=EXTRAS, rows=GLOBAL)
    clean = local_attention(q, k, v, **kw)
    torch.manual_seed(5)
    a = local_attention(q, k, v, dropout_p=0.5, **kw)
    torch.manual_seed(5)
    b = local_attention(q, k, v, dropout_p=0.5, **kw)
    torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert not torch.allclose(a, clean)
    assert all(g.isfinite().all() for g in grads(a, (q, k, v)))


@pytest.mark.parametrize("case", CASES)
def test_the_dropout_path_equals_dense_masked_attention(case):
    """With dropout the blocks, the extra keys and the dense rows run in plain autograd; at
    p = 1e-12 no weight is dropped (in practice) and the scale 1/(1 − p) is 1 within 1e-12."""
    q, k, v = qkv()
    kw = CASES[case]
    out = local_attention(q, k, v, dropout_p=1e-12, **kw)
    ref, _ = attention(q, k, v, dense_mask(19, 19, **kw))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-8)
    for got, want in zip(grads(out, (q, k, v)), grads(ref, (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-8)


def test_backward_saves_order_t_not_t_times_window():
    """At T = 2048 and a window of 64, what the band saves for backward is a few (T, D)
    tensors per head (q, k, v, the output, the log-sum-exp), not (T, W) scores or T×T."""
    t, h, d = 2048, 2, 8
    q, k, v = qkv(b=1, h=h, h_kv=h, t=t, s=t, d=d, d_v=d, dtype=torch.float32)
    saved = []

    def pack(x):
        saved.append(x.numel())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = local_attention(q, k, v, before=32, after=31, allows=causal(64))
    assert 0 < sum(saved) < 20 * t * h * d  # a (T, W) score tensor alone would be 64·T·H
    out.sum().backward()
    assert q.grad.isfinite().all()


def test_bad_arguments_are_named():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="before \\+ after"):
        local_attention(q, k, v, before=-3, after=1)
    with pytest.raises(ValueError, match="extras"):
        local_attention(q, k, v, before=1, after=1, extras=torch.full((19, 2), 19))
    with pytest.raises(ValueError, match="q_pos"):
        local_attention(q, k, v, before=1, after=1, q_pos=torch.arange(19) * 2)
    with pytest.raises(ValueError, match="edge_index"):
        edge_attention(q, k, v, torch.tensor([[0, 19], [1, 2]]))


def random_edges(t, s, e, seed=0):
    """Duplicate-free random edges j -> i; target 0 receives none."""
    g = torch.Generator().manual_seed(seed)
    flat = torch.randperm(t * s, generator=g)[:e]
    src, dst = flat % s, flat // s
    keep = dst != 0
    return torch.stack([src[keep], dst[keep]])


@pytest.mark.parametrize("h_kv", [4, 2])
@pytest.mark.parametrize("t, s", [(9, 9), (6, 11)])
def test_edges_equal_dense_masked_attention(h_kv, t, s):
    q, k, v = qkv(h_kv=h_kv, t=t, s=s, d_v=5)
    edges = random_edges(t, s, e=t * s // 3)
    km = torch.ones(2, s, dtype=torch.bool)
    km[1, -3:] = False
    out = edge_attention(q, k, v, edges, key_mask=km)
    adj = torch.zeros(t, s, dtype=torch.bool)
    adj[edges[1], edges[0]] = True  # target i may receive from source j
    ref, _ = attention(q, k, v, adj & km[:, None, None, :])
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-8)
    assert torch.all(out[:, :, 0] == 0)  # no incoming edge: zeros
    for got, want in zip(grads(out, (q, k, v)), grads(ref, (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-8)


def test_edges_dropout_follows_the_seed():
    q, k, v = qkv()
    edges = random_edges(19, 19, e=100)
    torch.manual_seed(3)
    a = edge_attention(q, k, v, edges, dropout_p=0.5)
    torch.manual_seed(3)
    b = edge_attention(q, k, v, edges, dropout_p=0.5)
    torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert not torch.allclose(a, edge_attention(q, k, v, edges))


def test_an_edge_listed_twice_counts_twice():
    """As in PyTorch Geometric: two copies of j -> i give key j twice the weight e^{a} in
    query i's softmax, that is an additive log 2 on its score."""
    q, k, v = qkv(t=9, s=9)
    edges = random_edges(9, 9, e=30)
    twice = torch.cat([edges, edges[:, :5]], dim=1)
    out = edge_attention(q, k, v, twice)
    bias = torch.full((9, 9), float("-inf"), dtype=q.dtype)
    bias[edges[1], edges[0]] = 0.0
    bias[edges[1, :5], edges[0, :5]] = torch.log(torch.tensor(2.0, dtype=q.dtype))
    ref, _ = attention(q, k, v, bias.nan_to_num(neginf=-1e30))  # no row is empty but row 0
    keep = torch.arange(9) != 0  # target 0 receives no edge: glassformer gives zeros
    torch.testing.assert_close(out[:, :, keep], ref[:, :, keep], atol=1e-10, rtol=1e-8)
    assert torch.all(out[:, :, 0] == 0)
    g_out = grads(out[:, :, keep], (q, k, v))
    for got, want in zip(g_out, grads(ref[:, :, keep], (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-8)


def test_the_edges_dropout_path_equals_dense_masked_attention():
    """With dropout the edges run in plain autograd; at p = 1e-12 nothing is dropped."""
    q, k, v = qkv(t=9, s=11)
    edges = random_edges(9, 11, e=40)
    km = torch.ones(2, 11, dtype=torch.bool)
    km[1, -3:] = False
    out = edge_attention(q, k, v, edges, key_mask=km, dropout_p=1e-12)
    ref = edge_attention(q, k, v, edges, key_mask=km)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-8)
    for got, want in zip(grads(out, (q, k, v)), grads(ref, (q, k, v)), strict=True):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-8)


def test_edges_backward_saves_order_t_not_edges_times_d():
    """At T = 512 and 64 edges into each node, what backward keeps is q, k, v, the output,
    a log-sum-exp per target and the edges, not (E, D) messages."""
    t, h, d = 512, 2, 8
    q, k, v = qkv(b=1, h=h, h_kv=h, t=t, s=t, d=d, d_v=d, dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    edges = torch.stack([torch.randint(0, t, (64 * t,), generator=g), torch.arange(t).repeat(64)])
    saved = []

    def pack(x):
        saved.append(x.numel())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = edge_attention(q, k, v, edges)
    e = edges.shape[1]
    assert 0 < sum(saved) < 2 * e + 6 * t * h * d  # (E, D) messages alone would be E·H·D
    out.sum().backward()
    assert q.grad.isfinite().all()
