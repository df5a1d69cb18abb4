"""Attention on a graph against PyTorch Geometric's TransformerConv (Shi et al. 2021).

``TransformerConv(C, D, heads=H, concat=True, root_weight=False, beta=False, dropout=0)``
computes, for each node i, Concat_h Σ_{j→i} α_ij^h (W_V^h x_j + b_V^h) with α^h the softmax
over the edges into i of (W_Q^h x_i + b_Q^h)ᵀ(W_K^h x_j + b_K^h)/√D: glassformer's
multi-head attention (Eq. 4, 1) on the ``from_edge_index`` graph, with W^O the identity and no
output bias. Nodes with no incoming edge get zeros in both. Float32, outputs and input
gradients within 1e-5; glassformer's dense path (the default on a graph this small), its
message-passing path and its local path are each compared.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.testing import assert_close

with warnings.catch_warnings():  # PyG scripts functions with torch.jit at import time
    warnings.simplefilter("ignore", DeprecationWarning)
    from torch_geometric.nn import TransformerConv

from glassformer import graphs
from glassformer.nn import MultiHeadAttention
from glassformer.nn.graph_attention import graph_attention

N, C, H = 23, 24, 4
TOL = dict(atol=1e-5, rtol=1e-5)


def random_edges(seed: int) -> torch.Tensor:
    """About 4 edges per node, no repeats, node 5 with no incoming edge."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (4 * N,), generator=g)
    dst = torch.randint(0, N, (4 * N,), generator=g)
    keep = dst != 5
    codes = torch.unique(dst[keep] * N + src[keep])
    return torch.stack([codes % N, codes // N])  # (2, E): source j, target i


def pair(seed: int) -> tuple[TransformerConv, MultiHeadAttention]:
    torch.manual_seed(seed)
    conv = TransformerConv(C, C // H, heads=H, concat=True, root_weight=False, beta=False)
    for p in conv.parameters():
        torch.nn.init.normal_(p, std=0.3)
    mha = MultiHeadAttention(C, H)
    with torch.no_grad():
        for ours, theirs in ((mha.q_proj, conv.lin_query), (mha.k_proj, conv.lin_key),
                             (mha.v_proj, conv.lin_value)):  # fmt: skip
            ours.weight.copy_(theirs.weight)
            ours.bias.copy_(theirs.bias)
        mha.out_proj.weight.copy_(torch.eye(C))  # W^O = I
        mha.out_proj.bias.zero_()
    return conv.eval(), mha.eval()


def run(fn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.clone().requires_grad_(True)
    out = fn(x)
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    return out.detach(), x.grad


@pytest.mark.parametrize("seed", [0, 1])
def test_multihead_attention_on_the_graph_equals_transformer_conv(seed):
    edge_index = random_edges(seed)
    graph = graphs.from_edge_index(edge_index, N)
    conv, mha = pair(seed)
    x = torch.randn(N, C, generator=torch.Generator().manual_seed(seed + 10))
    want, want_grad = run(lambda u: conv(u, edge_index), x)
    assert not want[5].any()  # no incoming edge: zeros
    got, got_grad = run(lambda u: mha(u[None], mask=graph)[0], x)
    assert_close(got, want, **TOL)
    assert_close(got_grad, want_grad, **TOL)


@pytest.mark.parametrize("path", ["edges", "local"])
def test_each_sparse_path_equals_transformer_conv(path):
    edge_index = random_edges(3)
    graph = graphs.from_edge_index(edge_index, N)
    conv, mha = pair(3)
    x = torch.randn(N, C, generator=torch.Generator().manual_seed(4))

    def glass(u: torch.Tensor) -> torch.Tensor:
        (q, qb), (k, kb), (v, vb) = mha.projection_weights()
        heads = [
            torch.nn.functional.linear(u, w, b).view(1, N, H, C // H).transpose(1, 2)
            for w, b in ((q, qb), (k, kb), (v, vb))
        ]  # (1, H, N, D) each
        z = graph_attention(*heads, graph, path=path)  # (1, H, N, D)
        return z.transpose(1, 2).reshape(N, C)

    want, want_grad = run(lambda u: conv(u, edge_index), x)
    got, got_grad = run(glass, x)
    assert_close(got, want, **TOL)
    assert_close(got_grad, want_grad, **TOL)
