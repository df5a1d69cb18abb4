"""attend(): one function picks the kernel for Eq. (1), and every kernel gives the same z."""

from types import SimpleNamespace

import torch

import glassformer.nn.multihead as attend_module
from glassformer.graphs import sliding_window
from glassformer.nn.hooks import HookPoint
from glassformer.nn.multihead import attend
from glassformer.nn.scaled_dot_product import attention


def qkv(t=6, s=6, h=4, h_kv=2, d=8):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, h, t, d, generator=g)
    return q, torch.randn(2, h_kv, s, d, generator=g), torch.randn(2, h_kv, s, d, generator=g)


def hooks():
    return SimpleNamespace(
        hook_mask=HookPoint(), hook_attn_scores=HookPoint(), hook_pattern=HookPoint()
    )


def test_the_fused_kernel_and_the_written_out_path_give_the_same_z():
    q, k, v = qkv()
    fused, none = attend(q, k, v, causal=True)
    written, weights = attend(q, k, v, causal=True, need_weights=True)
    expected, a = attention(q, k, v, causal=True)
    assert none is None
    torch.testing.assert_close(fused, expected)
    torch.testing.assert_close(written, expected)
    torch.testing.assert_close(weights, a)
    assert torch.equal(weights[..., 0, 1:], torch.zeros(2, 4, 5))  # the first query sees one key


def test_a_hook_on_the_pattern_runs_the_written_out_path_and_sees_a():
    q, k, v = qkv()
    points, seen = hooks(), []
    points.hook_pattern.add_hook(lambda a, hook: seen.append(a))
    z, weights = attend(q, k, v, causal=True, hooks=points)
    assert weights is None and len(seen) == 1
    _, a = attention(q, k, v, causal=True)
    torch.testing.assert_close(seen[0], a)
    torch.testing.assert_close(z, attend(q, k, v, causal=True)[0])


def test_hooks_nobody_reads_leave_the_fused_kernel_in_place(monkeypatch):
    q, k, v = qkv()
    written = attend(q, k, v, causal=True, need_weights=True)[0]
    monkeypatch.setattr(attend_module, "scores", lambda *a: (_ for _ in ()).throw(AssertionError))
    z, weights = attend(q, k, v, causal=True, hooks=hooks())  # no hook attached: fused
    assert weights is None
    torch.testing.assert_close(z, written)


def test_a_graph_restricts_every_kernel_to_its_edges():
    q, k, v = qkv(t=3, s=10)
    window = sliding_window(2, causal=True)  # the query and the key before it
    z, _ = attend(q, k, v, graph=window, key_start=5)
    written, a = attend(q, k, v, graph=window, key_start=5, need_weights=True)
    torch.testing.assert_close(z, written)
    assert torch.equal(
        a[0, 0] > 0,
        torch.tensor(
            [[0] * 6 + [1, 1, 0, 0], [0] * 7 + [1, 1, 0], [0] * 8 + [1, 1]], dtype=torch.bool
        ),
    )
