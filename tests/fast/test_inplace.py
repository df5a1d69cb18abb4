"""fast/inplace.py: without an autograd graph the activation and the residual sum overwrite
fresh tensors of ours. The results equal those computed with a graph, the caller's input is
never written, and with a graph (or autocast) nothing is done in place."""

import pytest
import torch

from glassformer.fast.inplace import writable
from glassformer.nn import DecoderBlock, EncoderBlock, FeedForward

C, H, FF = 16, 4, 48


def test_writable_only_without_a_graph():
    w = torch.randn(3, requires_grad=True)
    h = w * 2
    assert not writable(h)
    with torch.no_grad():
        assert writable(w * 2)
    with torch.inference_mode():
        assert writable(torch.randn(3) * 2)
    assert writable(torch.randn(3))  # nothing requires grad: nothing records it


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "swiglu"])
def test_feedforward_without_graph_equals_with_graph(activation):
    torch.manual_seed(0)
    ff = FeedForward(C, FF, activation)
    x = torch.randn(2, 7, C)
    before = x.clone()
    with_graph = ff(x)
    assert with_graph.requires_grad
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            got = ff(x)
        # gelu_tanh: the graph path computes x σ(2u) (gelu.py), in place F.gelu's tanh form
        torch.testing.assert_close(got, with_graph.detach(), rtol=0, atol=1e-6)
        assert torch.equal(x, before)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("kind", ["encoder", "decoder", "decoder-cross"])
def test_blocks_without_graph_equal_with_graph_and_leave_input(kind, norm_first):
    torch.manual_seed(0)
    opts = dict(norm_first=norm_first, activation="gelu")
    if kind == "encoder":
        blk = EncoderBlock(C, H, FF, **opts)
        run = lambda x: blk(x)  # noqa: E731
    else:
        blk = DecoderBlock(C, H, FF, cross_attention=kind == "decoder-cross", **opts)
        memory = torch.randn(2, 5, C) if kind == "decoder-cross" else None
        run = lambda x: blk(x, memory)  # noqa: E731
    x = torch.randn(2, 7, C)
    before = x.clone()
    with_graph = run(x)
    with torch.no_grad():
        got = run(x)
    assert torch.equal(got, with_graph.detach())  # same kernels, same order: bitwise
    assert torch.equal(x, before)


def test_graph_path_keeps_gradients_right_with_a_leaf_input():
    torch.manual_seed(0)
    blk = EncoderBlock(C, H, FF, norm_first=True).double()
    x = torch.randn(2, 5, C, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda u: blk(u), (x,))


def test_autocast_sum_stays_float32():
    torch.manual_seed(0)
    blk = EncoderBlock(C, H, FF, norm_first=True)
    x = torch.randn(2, 5, C)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        y = blk(x)
    assert y.dtype == torch.float32  # X (float32) + F(X) (bf16), not written into F(X)
    with torch.no_grad():
        want = blk(x)
    torch.testing.assert_close(y, want, rtol=0, atol=0.1)
