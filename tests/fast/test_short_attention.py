"""fast/short_attention.py: Eq. (1) with its backward written out equals the fused kernel and
autograd's own derivative (first and second order), and attention() sends exactly the cases
``pays`` names to it."""

import pytest
import torch
import torch.nn.functional as F

from glassformer.fast import short_attention as small
from glassformer.models import DecoderLM


def qkv(b=2, h=3, t=6, d=4, dtype=torch.float64, requires_grad=True):
    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(b, h, t, d, generator=g, dtype=dtype).requires_grad_(requires_grad)
        for _ in range(3)
    ]


@pytest.mark.parametrize("causal", [False, True])
def test_values_are_eq1(causal):
    q, k, v = qkv(requires_grad=False)
    scores = q @ k.transpose(-2, -1) / 2.0  # √d_k = 2
    if causal:
        scores = scores.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
    got = small.small_attention(q, k, v, causal=causal)
    torch.testing.assert_close(got, scores.softmax(dim=-1) @ v)


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_match_numerical_and_second_order(causal):
    q, k, v = qkv(t=5)

    def fn(q, k, v):
        return small.small_attention(q, k, v, causal=causal, scale=0.7)

    assert torch.autograd.gradcheck(fn, (q, k, v))
    assert torch.autograd.gradgradcheck(fn, (q, k, v))


@pytest.mark.parametrize("causal", [False, True])
def test_float32_equals_scaled_dot_product_attention(causal):
    q, k, v = qkv(b=4, h=4, t=64, d=32, dtype=torch.float32)
    got = small.small_attention(q, k, v, causal=causal)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    dy = torch.randn_like(want)
    for a, b in zip(
        torch.autograd.grad(got, (q, k, v), dy),
        torch.autograd.grad(want, (q, k, v), dy),
        strict=True,
    ):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-5)


def test_only_some_inputs_need_gradients():
    q, k, v = qkv()
    k.requires_grad_(False)
    y = small.small_attention(q, k, v, causal=True)
    dq, dv = torch.autograd.grad(y.sum(), (q, v), create_graph=True)
    (ddq,) = torch.autograd.grad(dq.sum() + dv.sum(), q)
    assert ddq.shape == q.shape and bool(ddq.abs().sum() > 0)


def test_head_views_of_one_projection_as_in_multihead():
    # q, k, v as MultiHeadAttention makes them: strided views of one (B, T, 3C) tensor
    b, t, h, d = 2, 8, 2, 4
    x = torch.randn(b, t, 3 * h * d, dtype=torch.float64, requires_grad=True)
    heads = [u.view(b, t, h, d).transpose(1, 2) for u in x.split(h * d, dim=-1)]
    got = small.small_attention(*heads, causal=True)
    want = F.scaled_dot_product_attention(*heads, is_causal=True)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(
        torch.autograd.grad(got.sum(), x)[0], torch.autograd.grad(want.sum(), x)[0]
    )


ROWS = small.MIN_ROWS // 64  # B·H with T = 64 at the threshold


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("training", True),
        ("no_grad", False),
        ("not_requires_grad", False),
        ("mask", False),
        ("dropout", False),
        ("gqa", False),
        ("long", False),
        ("cross_lengths", False),
        ("few_rows", False),
        ("bfloat16", False),
        ("autocast", False),
    ],
)
def test_pays_only_for_short_training_sequences(case, expected):
    b, h, t, d = ROWS // 4, 4, 64, 8
    q, k, v = qkv(b, h, t, d, dtype=torch.float32)
    mask, p = None, 0.0
    if case == "not_requires_grad":
        q, k, v = (u.detach() for u in (q, k, v))
    elif case == "mask":
        mask = torch.ones(t, t, dtype=torch.bool)
    elif case == "dropout":
        p = 0.1
    elif case == "gqa":
        k, v = k[:, :2], v[:, :2]
    elif case == "long":
        q, k, v = qkv(b, h, small.MAX_LENGTH + 1, d, dtype=torch.float32)
    elif case == "cross_lengths":
        k, v = k[:, :, :-1], v[:, :, :-1]
    elif case == "few_rows":
        q, k, v = qkv(b // 2, h, t, d, dtype=torch.float32)
    elif case == "bfloat16":
        q, k, v = (u.detach().bfloat16().requires_grad_() for u in (q, k, v))
    if case == "no_grad":
        with torch.no_grad():
            assert small.pays(q, k, v, mask, p) is expected
    elif case == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert small.pays(q, k, v, mask, p) is expected
    else:
        assert small.pays(q, k, v, mask, p) is expected


def spy_on_small_attention(monkeypatch) -> list:
    """Record the keyword arguments of every small_attention call."""
    calls = []
    real = small.small_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(small, "small_attention", spy)
    return calls


def test_attention_dispatches_to_it_and_returns_the_same(monkeypatch):
    q, k, v = qkv(ROWS // 4, 4, 64, 8, dtype=torch.float32)
    calls = spy_on_small_attention(monkeypatch)
    got = small.attention(q, k, v, causal=True)
    assert calls == [{"causal": True, "scale": None}]
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_a_training_step_of_a_decoder_takes_it_and_matches_flash(monkeypatch):
    from glassformer.config import ModelConfig

    cfg = ModelConfig(
        family="decoder", vocab_size=50, max_len=64, d_model=32, n_layer=2, n_head=4,
        activation="gelu_tanh", norm_first=True, positional="learned",
    )  # fmt: skip
    torch.manual_seed(0)
    model = DecoderLM(cfg)
    ids = torch.randint(0, 50, (ROWS // 4, 64))
    calls = spy_on_small_attention(monkeypatch)
    out = model(ids, labels=ids)
    assert calls == [{"causal": True, "scale": None}] * cfg.n_layer
    grads = torch.autograd.grad(out.loss, list(model.parameters()))
    monkeypatch.setattr(small, "pays", lambda *a: False)  # the flash kernel everywhere
    ref = model(ids, labels=ids)
    ref_grads = torch.autograd.grad(ref.loss, list(model.parameters()))
    torch.testing.assert_close(out.loss, ref.loss, atol=1e-6, rtol=1e-6)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
