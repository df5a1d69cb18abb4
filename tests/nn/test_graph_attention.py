"""Attention on a graph: the local and the message-passing paths equal dense masked attention
on the same graph, in values and in the gradients of q, k and v, for every kind of graph,
causal or not, with padding, a sequence length that is not a multiple of the block, and as
decoding steps (queries the last T of the keys, keys starting past position 0)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer import graphs as G
from glassformer.nn.graph_attention import graph_attention, graph_mask
from glassformer.nn.scaled_dot_product import attention

GRAPHS = {
    "window": G.sliding_window(5),
    "causal-window": G.sliding_window(4, causal=True),
    "dilated": G.dilated(3, 2),
    "longformer": G.sliding_window(4) | G.global_tokens([0, 7]),
    "bigbird": G.bigbird(3, 2, 2, seed=1),
    "strided": G.strided(4),
    "random": G.random_keys(3, seed=2),
    "self": G.self_loops(),
    "edges": G.from_edge_index(
        torch.randint(0, 70, (2, 150), generator=torch.Generator().manual_seed(0)), 70
    ),
}
LOCAL = {"window", "causal-window", "dilated", "longformer", "bigbird", "random", "self", "edges"}


def inputs(b=2, h=4, h_kv=2, t=67, s=None, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = t if s is None else s
    q = torch.randn(b, h, t, d, generator=g, dtype=torch.float64)
    k = torch.randn(b, h_kv, s, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, h_kv, s, d + 2, generator=g, dtype=torch.float64)
    lengths = torch.tensor([s, s - 9])[:b]
    key_mask = (torch.arange(s) < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S) padding
    return q, k, v, key_mask


def values_and_grads(fn, q, k, v):
    q, k, v = (u.clone().requires_grad_(True) for u in (q, k, v))
    out = fn(q, k, v)
    (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
    return out.detach(), q.grad, k.grad, v.grad


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("causal", [False, True])
def test_sparse_paths_equal_dense_masked_attention(name, causal):
    graph = GRAPHS[name]
    q, k, v, key_mask = inputs()
    t = q.shape[2]
    mask = key_mask & graph_mask(graph, t, t, causal=causal)
    want = values_and_grads(lambda *a: attention(*a, mask)[0], q, k, v)
    paths = ["dense", "edges"] + (["local"] if name in LOCAL else [])
    for path in paths:
        got = values_and_grads(
            lambda *a, p=path: graph_attention(*a, graph, key_mask, causal=causal, path=p),
            q,
            k,
            v,
        )
        for g, w in zip(got, want, strict=True):
            assert_close(g, w, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("name", ["window", "longformer", "bigbird", "dilated"])
def test_decoding_steps_on_a_graph_see_the_positions_of_their_keys(name):
    """Queries are the last 3 of 40 keys whose positions start at 25 (a rolling cache)."""
    graph = GRAPHS[name]
    q, k, v, _ = inputs(b=1, t=3, s=40)
    mask = graph_mask(graph, 3, 40, key_start=25, causal=True)
    want = attention(q, k, v, mask)[0]
    for path in ("dense", "local", "edges"):
        got = graph_attention(q, k, v, graph, causal=True, key_start=25, path=path)
        assert_close(got, want, atol=1e-10, rtol=1e-10)


def test_cross_attention_graph_uses_target_and_source_positions():
    """Queries at target positions 4..9 attend source positions by the graph's rule."""
    graph = G.sliding_window(3)
    q, k, v, key_mask = inputs(t=6, s=20)
    mask = graph_mask(graph, 6, 20, query_start=4)
    assert mask[0, 6] and not mask[0, 7] and mask[5, 7] and not mask[5, 6]
    want = attention(q, k, v, key_mask & mask)[0]
    for path in ("dense", "local", "edges"):
        got = graph_attention(q, k, v, graph, key_mask, query_start=4, path=path)
        assert_close(got, want, atol=1e-10, rtol=1e-10)


def test_auto_takes_the_local_path_on_long_sequences_and_dense_on_short_ones(monkeypatch):
    import glassformer.nn.graph_attention as ga

    taken = []
    monkeypatch.setattr(ga, "local_attention", lambda *a, **k: taken.append("local") or a[0])
    monkeypatch.setattr(ga, "edge_attention", lambda *a, **k: taken.append("edges") or a[0])
    long_q = torch.zeros(1, 1, 2048, 4)
    graph_attention(long_q, long_q, long_q, G.sliding_window(16))
    graph_attention(long_q, long_q, long_q, G.strided(64) & G.causal())
    assert taken == ["local", "edges"]
    short = torch.randn(1, 1, 32, 4)
    out = graph_attention(short, short, short, G.sliding_window(16))
    assert taken == ["local", "edges"] and out.shape == short.shape  # dense: nothing recorded


def test_a_mask_that_is_not_a_key_mask_runs_dense_or_is_refused_by_name():
    q, k, v, _ = inputs(b=1, t=40)
    query_mask = torch.rand(1, 1, 40, 40) > 0.3
    want = attention(q, k, v, query_mask & G.sliding_window(3).mask(40))[0]
    assert_close(graph_attention(q, k, v, G.sliding_window(3), query_mask), want)
    with pytest.raises(ValueError, match="key padding mask"):
        graph_attention(q, k, v, G.sliding_window(3), query_mask, path="local")
    with pytest.raises(ValueError, match="path must be one of"):
        graph_attention(q, k, v, G.sliding_window(3), path="sparse")


def test_a_graph_of_3_nodes_refuses_7_positions_and_runs_on_up_to_3():
    """A graph given by its edges exists on its nodes only: attention on more positions
    would give the positions past them nothing to attend to, so it is refused."""
    from glassformer.nn import MultiHeadAttention

    g = G.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]), 3)
    mha = MultiHeadAttention(8, 2)
    words = "the attention graph has 3 nodes but the sequence has 7 positions: allowed at most 3"
    for need_weights in (False, True):  # the fused path and the written-out one
        with pytest.raises(ValueError, match=words):
            mha(torch.randn(1, 7, 8), graph=g, need_weights=need_weights)
    with pytest.raises(ValueError, match=words):  # cross-attention: 7 source positions
        mha(torch.randn(1, 2, 8), torch.randn(1, 7, 8), graph=g)
    with pytest.raises(ValueError, match=words):  # an intersection has its part's nodes only
        mha(torch.randn(1, 7, 8), graph=g & G.sliding_window(2))
    q = torch.randn(1, 2, 7, 4)
    for path in ("dense", "edges"):
        with pytest.raises(ValueError, match=words):
            graph_attention(q, q, q, g, path=path)
    with pytest.raises(ValueError, match="has 3 nodes but the sequence has 4 positions"):
        graph_mask(g, 1, 4)
    x = torch.randn(1, 3, 8)
    _, weights = mha(x, graph=g, need_weights=True)
    assert torch.equal(weights[0, 0] > 0, g.mask(3))  # on its 3 nodes: its edges
    assert mha(torch.randn(1, 7, 8), graph=g | G.sliding_window(2)).shape == (1, 7, 8)
