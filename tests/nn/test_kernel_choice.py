"""MultiHeadAttention.written_out chooses the kernel for Eq. (1), and every kernel gives the
same output: the written-out Eqs. (2), (3), (1) (hooks or need_weights), a graph's, fused."""

import torch

import glassformer.nn.multihead as multihead
from glassformer.graphs import sliding_window
from glassformer.nn import MultiHeadAttention, attention


def layer_and_input(t=6, h=4, h_kv=2, c=32):
    torch.manual_seed(0)
    return MultiHeadAttention(c, h, n_kv_head=h_kv).eval(), torch.randn(2, t, c)


def heads(mha, x):
    """q (B, H, T, D), k and v (B, H_kv, T, D) of self-attention, as the module splits them."""
    q, k, v = mha.projections(x)
    b, t, _ = x.shape
    split = lambda u, n: u.view(b, t, n, mha.head_dim).transpose(1, 2)  # noqa: E731
    return split(q, mha.n_head), split(k, mha.n_kv_head), split(v, mha.n_kv_head)


def test_the_fused_kernel_and_the_written_out_path_give_the_same_output():
    mha, x = layer_and_input()
    fused = mha(x, causal=True)  # the output alone
    written, weights = mha(x, causal=True, need_weights=True)
    z, a = attention(*heads(mha, x), causal=True)  # Eq. (1), functional form
    expected = mha.out_proj(z.transpose(1, 2).reshape(2, 6, 32))
    torch.testing.assert_close(fused, expected)
    torch.testing.assert_close(written, expected)
    torch.testing.assert_close(weights, a)
    assert torch.equal(weights[..., 0, 1:], torch.zeros(2, 4, 5))  # the first query sees one key


def test_a_hook_on_the_pattern_runs_the_written_out_path_and_sees_a():
    mha, x = layer_and_input()
    _, a = mha(x, causal=True, need_weights=True)
    fused, seen = mha(x, causal=True), []
    mha.hook_pattern.add_hook(lambda w, hook: seen.append(w))
    assert mha.written_out()
    y = mha(x, causal=True)
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], a)
    torch.testing.assert_close(y, fused)


def test_hooks_nobody_reads_leave_the_fused_kernel_in_place(monkeypatch):
    mha, x = layer_and_input()
    written, _ = mha(x, causal=True, need_weights=True)
    monkeypatch.setattr(multihead, "scores", lambda *a: (_ for _ in ()).throw(AssertionError))
    assert not mha.written_out()
    torch.testing.assert_close(mha(x, causal=True), written)  # no hook attached: fused


def test_a_padded_batch_gives_the_same_output_on_every_kernel():
    mha, x = layer_and_input()
    keys = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])[:, None, None, :]  # (B,1,1,S)
    written, a = mha(x, mask=keys, causal=True, need_weights=True)
    torch.testing.assert_close(mha(x, mask=keys, causal=True), written)
    torch.testing.assert_close(mha(x, mask=keys), mha(x, mask=keys, need_weights=True)[0])
    assert torch.equal(a[1, :, :, 3:], torch.zeros(4, 6, 3))  # no weight on padding


def test_a_graph_restricts_every_kernel_to_its_edges():
    mha, x = layer_and_input(t=5)
    window = sliding_window(2, causal=True)  # the query and the key before it
    y = mha(x, graph=window)
    written, a = mha(x, graph=window, need_weights=True)
    torch.testing.assert_close(y, written)
    band = torch.eye(5, dtype=torch.bool) | torch.eye(5, dtype=torch.bool).roll(-1, 1).tril()
    assert torch.equal(a[0, 0] > 0, band)
