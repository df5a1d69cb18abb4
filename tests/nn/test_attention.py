"""attention(): Eq. (1)-(3) written out, the fused path, masks, fully masked rows, GQA."""

import math

import pytest
import torch

from glassformer.nn import attention, causal_mask, padding_mask

torch.manual_seed(0)


def qkv(b=2, h=4, t=5, s=7, d=8, h_kv=None, dtype=torch.float64):
    h_kv = h if h_kv is None else h_kv
    return (
        torch.randn(b, h, t, d, dtype=dtype),
        torch.randn(b, h_kv, s, d, dtype=dtype),
        torch.randn(b, h_kv, s, d, dtype=dtype),
    )


def eq3_by_hand(q, k, v, allowed):
    """y_n = (1/Z_n) Σ_m e^{a_nm} v_m over allowed m, a_nm = q_n·k_m/√d, one query at a time."""
    b, h, t, d = q.shape
    out = torch.zeros(b, h, t, v.shape[-1], dtype=q.dtype)
    for bi in range(b):
        for hi in range(h):
            for n in range(t):
                ms = [m for m in range(k.shape[2]) if allowed[bi, hi, n, m]]
                if not ms:
                    continue
                a = torch.stack([q[bi, hi, n] @ k[bi, hi, m] / math.sqrt(d) for m in ms])
                w = a.exp() / a.exp().sum()
                out[bi, hi, n] = sum(wi * v[bi, hi, m] for wi, m in zip(w, ms, strict=True))
    return out


@pytest.mark.parametrize("need_weights", [True, False])
def test_matches_eq3_written_as_loops(need_weights):
    q, k, v = qkv()
    allowed = torch.rand(2, 4, 5, 7) > 0.3
    allowed[0, 1, 2] = False  # one row with nothing to attend to
    out, _ = attention(q, k, v, allowed, need_weights=need_weights)
    torch.testing.assert_close(out, eq3_by_hand(q, k, v, allowed), atol=1e-12, rtol=1e-10)


def test_weights_rows_sum_to_one_and_are_zero_where_masked():
    q, k, v = qkv()
    mask = causal_mask(5, 7) & padding_mask(torch.tensor([7, 4]))
    out, w = attention(q, k, v, mask)
    assert w.shape == (2, 4, 5, 7)
    assert torch.all(w.masked_select(~mask.expand_as(w)) == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 5, dtype=w.dtype))
    torch.testing.assert_close(out, w @ v)


@pytest.mark.parametrize(
    "mask_kind", ["none", "causal_flag", "bool", "float", "padding", "causal_plus_padding"]
)
@pytest.mark.parametrize("h_kv", [4, 2, 1])
def test_explicit_equals_fused(mask_kind, h_kv):
    q, k, v = qkv(t=6, s=6, h_kv=h_kv, dtype=torch.float32)
    causal, mask = False, None
    if mask_kind == "causal_flag":
        causal = True
    elif mask_kind == "bool":
        mask = torch.rand(2, 1, 6, 6) > 0.4
    elif mask_kind == "float":
        mask = torch.randn(2, 4, 6, 6).masked_fill(torch.rand(2, 4, 6, 6) > 0.6, float("-inf"))
    elif mask_kind == "padding":
        mask = padding_mask(torch.tensor([6, 3]))
    elif mask_kind == "causal_plus_padding":
        causal, mask = True, padding_mask(torch.tensor([2, 6]))
    explicit, w = attention(q, k, v, mask, causal=causal, need_weights=True)
    fused, none = attention(q, k, v, mask, causal=causal, need_weights=False)
    assert none is None and w is not None
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("float_mask", [False, True])
def test_fully_masked_rows_give_zeros_and_finite_gradients(need_weights, float_mask):
    q, k, v = (u.requires_grad_() for u in qkv(dtype=torch.float32))
    mask = torch.ones(2, 4, 5, 7, dtype=torch.bool)
    mask[1, :, 3] = False  # query 3 of example 1 sees nothing
    mask[0] = False  # example 0 sees nothing at all
    m = mask if not float_mask else torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    out, _ = attention(q, k, v, m, need_weights=need_weights)
    assert torch.isfinite(out).all()
    assert torch.all(out[0] == 0) and torch.all(out[1, :, 3] == 0)
    assert out[1, :, 2].abs().sum() > 0
    out.sum().backward()
    for u in (q, k, v):
        assert torch.isfinite(u.grad).all()
    assert torch.all(q.grad[0] == 0)  # no key reached these queries


def test_all_padding_batch_is_finite():
    q, k, v = qkv(dtype=torch.float32)
    for need_weights in (True, False):
        out, _ = attention(
            q, k, v, padding_mask(torch.tensor([0, 0]), 7), need_weights=need_weights
        )
        assert torch.all(out == 0)


def test_causal_with_cache_offset_matches_last_rows_of_full():
    # T new queries are the last T of S positions: bottom-right aligned causal mask.
    q, k, v = qkv(t=7, s=7)
    full, _ = attention(q, k, v, causal=True)
    for need_weights in (True, False):
        last, _ = attention(q[:, :, 4:], k, v, causal=True, need_weights=need_weights)
        torch.testing.assert_close(last, full[:, :, 4:])


def test_grouped_query_equals_repeated_heads():
    q, k, v = qkv(h=6, h_kv=2)
    out, w = attention(q, k, v)
    k3, v3 = k.repeat_interleave(3, dim=1), v.repeat_interleave(3, dim=1)
    ref, w_ref = attention(q, k3, v3)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, w_ref)
    fused, _ = attention(q, k, v, need_weights=False)
    torch.testing.assert_close(fused, ref)


def test_permutation_equivariance():
    """Attention(PQ, PK, PV) = P Attention(Q, K, V) for a permutation P of the rows."""
    q, k, v = qkv(t=7, s=7)
    perm = torch.randperm(7)
    out, _ = attention(q, k, v)
    out_p, _ = attention(q[:, :, perm], k[:, :, perm], v[:, :, perm])
    torch.testing.assert_close(out_p, out[:, :, perm])


def test_dropout_only_in_training_sense():
    q, k, v = qkv(dtype=torch.float32)
    torch.manual_seed(1)
    a, w = attention(q, k, v, dropout_p=0.5)
    b, _ = attention(q, k, v, dropout_p=0.0)
    assert not torch.allclose(a, b)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 5))  # weights reported pre-dropout


@pytest.mark.parametrize(
    "mask, words",
    [
        (torch.ones(2, 4, 5, 6, dtype=torch.bool), ["mask", "(2, 4, 5, 6)", "(B, H, T, S)"]),
        (torch.ones(3, 1, 1, 7, dtype=torch.bool), ["mask", "(3, 1, 1, 7)"]),
        (torch.ones(5, 7, dtype=torch.long), ["mask", "torch.int64", "bool"]),
    ],
)
def test_bad_masks_raise_value_error_naming_the_problem(mask, words):
    q, k, v = qkv()
    for need_weights in (True, False):
        with pytest.raises(ValueError) as err:
            attention(q, k, v, mask, need_weights=need_weights)
        for word in words:
            assert word in str(err.value)


def test_bad_shapes_raise_value_error():
    q, k, v = qkv(h=4, h_kv=3)
    with pytest.raises(ValueError, match="multiple of the 3 key/value heads"):
        attention(q, k, v)
    with pytest.raises(ValueError, match="4-D"):
        attention(q[0], k[0], v[0])
