"""MultiHeadAttention's attention_scores ("Formal Algorithms for Transformers", "Self-Attention
across the sequence"):
"dot" xᵀx′ and "shared" xᵀUᵀUx′ give symmetric scores, "separate" xᵀU_qᵀU_k x′ is the
attention as it always was."""

import pytest
import torch
import torch.nn.functional as F

from glassformer.nn import KVCache, MultiHeadAttention
from glassformer.nn.qk_projections import ATTENTION_SCORES

C, H = 16, 4


def _scores(attn: MultiHeadAttention, x: torch.Tensor, **kwargs) -> torch.Tensor:
    """â (B, H, T, S) as hook_attn_scores reads it."""
    seen = {}
    handle = attn.hook_attn_scores.add_hook(lambda t, hook: seen.setdefault("a", t.detach()))
    attn(x, **kwargs)
    handle.remove()
    return seen["a"]


@pytest.mark.parametrize("scores", ["shared", "dot"])
@pytest.mark.parametrize("bias", [True, False])
def test_dot_and_shared_scores_are_symmetric(scores, bias):
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, attention_scores=scores, bias=bias)
    x = torch.randn(3, 7, C)
    a = _scores(attn, x)  # no mask: S itself
    torch.testing.assert_close(a, a.transpose(-1, -2))
    # with rotary positions too: (R_n q_n)·(R_m q_m) is still a dot product of one kind of vector
    angles = torch.arange(7.0)[:, None] * torch.rand(C // H // 2)
    rope = (angles.cos().repeat(1, 2), angles.sin().repeat(1, 2))
    a = _scores(attn, x, rope=rope)
    torch.testing.assert_close(a, a.transpose(-1, -2))


def test_separate_scores_are_not_symmetric():
    torch.manual_seed(0)
    a = _scores(MultiHeadAttention(C, H), torch.randn(3, 7, C))
    assert (a - a.transpose(-1, -2)).abs().max() > 0.1


def test_separate_scores_query_n_as_x_n_U_q_U_k_x_n_prime():
    """â[n, n′] = xₙᵀ U_qᵀ U_k x_n′ / √D (q_n · k_n′), with U_q, U_k a head's rows of W^Q, W^K;
    the transpose xₙᵀ U_kᵀ U_q x_n′ is another matrix."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, bias=False)
    x = torch.randn(1, 7, C)
    a = _scores(attn, x)  # (1, H, T, T)
    w_q, w_k = attn.q_proj.weight, attn.k_proj.weight
    d = C // H
    for h in range(H):
        u_q, u_k = w_q[h * d : (h + 1) * d], w_k[h * d : (h + 1) * d]  # (D, C) each
        want = x[0] @ u_q.T @ u_k @ x[0].T / d**0.5  # (T, T): row n, column n′
        torch.testing.assert_close(a[0, h], want)
        swapped = x[0] @ u_k.T @ u_q @ x[0].T / d**0.5
        assert (a[0, h] - swapped).abs().max() > 0.1


def test_dot_puts_each_token_first_on_itself_when_the_norms_are_equal():
    """Cauchy–Schwarz: xᵀx′ <= |x| |x′| = xᵀx when |x′| = |x| (after a norm layer)."""
    torch.manual_seed(0)
    x = F.normalize(torch.randn(2, 9, C // H), dim=-1).repeat(1, 1, H)  # every head's slice unit
    a = _scores(MultiHeadAttention(C, H, attention_scores="dot"), x)
    assert torch.equal(a.argmax(-1), torch.arange(9).expand(2, H, 9))


def test_separate_is_the_attention_it_always_was():
    """W^Q, W^K, W^V as three Linears (torch.nn's and Hugging Face's names), each called, Eq. (1)
    by torch's kernel: equal bit for bit to that computation written out here, and to the
    fused [W^Q; W^K; W^V] of earlier checkpoints up to rounding."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, n_kv_head=2)
    assert attn.scores == "separate" and MultiHeadAttention(C, H).scores == "separate"
    assert {k: tuple(v.shape) for k, v in attn.state_dict().items()} == {
        "q_proj.weight": (C, C),
        "q_proj.bias": (C,),
        "k_proj.weight": (8, C),
        "k_proj.bias": (8,),
        "v_proj.weight": (8, C),
        "v_proj.bias": (8,),
        "out_proj.weight": (C, C),
        "out_proj.bias": (C,),
    }
    x, z = torch.randn(2, 5, C), torch.randn(2, 6, C)

    def heads(u, n):
        return u.view(u.shape[0], u.shape[1], n, 4).transpose(1, 2)

    def attend(q, k, v, causal=False):
        y = F.scaled_dot_product_attention(
            heads(q, H), heads(k, 2), heads(v, 2), is_causal=causal, enable_gqa=True
        )
        return attn.out_proj(y.transpose(1, 2).reshape(2, 5, C))

    (wq, bq), (wk, bk), (wv, bv) = attn.projection_weights()
    expected = attend(F.linear(x, wq, bq), F.linear(x, wk, bk), F.linear(x, wv, bv), True)
    assert torch.equal(attn(x, causal=True), expected)
    w, b = torch.cat([wq, wk, wv]), torch.cat([bq, bk, bv])  # the fused in_proj
    fused = attend(*F.linear(x, w, b).split([C, 8, 8], dim=-1), True)
    torch.testing.assert_close(attn(x, causal=True), fused)
    # cross-attention: Q from x, K and V from z
    expected = attend(F.linear(x, wq, bq), F.linear(z, wk, bk), F.linear(z, wv, bv))
    assert torch.equal(attn(x, z), expected)


def test_parameters_of_each_setting():
    """dot: no query/key parameters; shared: one matrix for both; separate: two. The weights
    ``projection_weights`` gives are the modules' own tensors."""
    names = {}
    for scores in ATTENTION_SCORES:
        attn = MultiHeadAttention(C, H, attention_scores=scores)
        names[scores] = list(attn.state_dict())
        (wq, bq), (wk, bk), (wv, bv) = attn.projection_weights()
        assert wv is attn.v_proj.weight and bv is attn.v_proj.bias
        if scores == "separate":
            assert wq is attn.q_proj.weight and bk is attn.k_proj.bias
        if scores == "shared":
            assert wq is wk is attn.qk_proj.weight and bq is bk is attn.qk_proj.bias
        if scores == "dot":
            assert torch.equal(wq, torch.eye(C)) and bq is None and bk is None
    out = ["out_proj.weight", "out_proj.bias"]
    assert names == {
        "separate": ["q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                     "v_proj.weight", "v_proj.bias", *out],
        "shared": ["qk_proj.weight", "qk_proj.bias", "v_proj.weight", "v_proj.bias", *out],
        "dot": ["v_proj.weight", "v_proj.bias", *out],
    }  # fmt: skip


@pytest.mark.parametrize("scores", ["shared", "dot"])
def test_queries_and_keys_are_one_projection(scores):
    """hook_q and hook_k read the same values; dot's are the input itself, head by head."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, attention_scores=scores)
    seen = {}
    for name in ("hook_q", "hook_k"):
        getattr(attn, name).add_hook(lambda t, hook, name=name: seen.setdefault(name, t))
    x = torch.randn(2, 5, C)
    attn(x)
    assert torch.equal(seen["hook_q"], seen["hook_k"])
    if scores == "dot":
        assert torch.equal(seen["hook_q"], x.view(2, 5, H, C // H))


@pytest.mark.parametrize("scores", ["shared", "dot"])
def test_kv_cache_equals_recomputing(scores):
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, attention_scores=scores).eval()
    x = torch.randn(2, 6, C)
    full = attn(x, causal=True)
    cache = KVCache()
    steps = [attn(x[:, :4], causal=True, cache=cache)]
    steps += [attn(x[:, i : i + 1], causal=True, cache=cache) for i in (4, 5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"attention_scores='bogus' is not allowed; allowed: "
                       r"'separate', 'shared', 'dot'"):  # fmt: skip
        MultiHeadAttention(C, H, attention_scores="bogus")
    with pytest.raises(ValueError, match=r"n_kv_head=2 must equal n_head=4 \(grouped-query"):
        MultiHeadAttention(C, H, n_kv_head=2, attention_scores="shared")


@pytest.mark.parametrize("scores", ["shared", "dot"])
def test_cross_attention_uses_the_same_projection_for_x_and_z(scores):
    """q from x, k from the source z, through the one projection (or none): a_nm = s(x_n, z_m)."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, attention_scores=scores).eval()
    x, z = torch.randn(2, 5, C), torch.randn(2, 6, C)
    (w, b), _, (wv, bv) = attn.projection_weights()
    u = (lambda t: t) if scores == "dot" else (lambda t: F.linear(t, w, b))
    q, k = u(x).view(2, 5, H, 4).transpose(1, 2), u(z).view(2, 6, H, 4).transpose(1, 2)
    v = F.linear(z, wv, bv).view(2, 6, H, 4).transpose(1, 2)
    y = ((q @ k.mT) / 2.0).softmax(-1) @ v
    want = attn.out_proj(y.transpose(1, 2).reshape(2, 5, C))
    torch.testing.assert_close(attn(x, z), want)
    cache = KVCache()  # the source's keys and values once, reused at the next step
    steps = [attn(x[:, :3], z, cache=cache), attn(x[:, 3:], z[:, :1] * 0, cache=cache)]
    torch.testing.assert_close(torch.cat(steps, dim=1), want)
