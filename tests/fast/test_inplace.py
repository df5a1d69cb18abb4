"""fast/inplace.py: without an autograd graph the activation and the residual sum overwrite
fresh tensors of ours. The results equal those computed with a graph, the caller's input is
never written, and with a graph (or autocast) nothing is done in place."""

import pytest
import torch

from glassformer.fast import inplace, use_fast_paths
from glassformer.fast.inplace import writable
from glassformer.models import DecoderLM
from glassformer.models.config import ModelConfig
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
    ff = use_fast_paths(FeedForward(C, FF, activation))
    x = torch.randn(2, 7, C)
    before = x.clone()
    with_graph = ff(x)
    assert with_graph.requires_grad
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            got = ff(x)
        torch.testing.assert_close(got, with_graph.detach(), rtol=0, atol=1e-6)
        assert torch.equal(x, before)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("kind", ["encoder", "decoder", "decoder-cross"])
def test_blocks_without_graph_equal_with_graph_and_leave_input(kind, norm_first):
    torch.manual_seed(0)
    opts = dict(norm_first=norm_first, activation="gelu")
    if kind == "encoder":
        blk = use_fast_paths(EncoderBlock(C, H, FF, **opts))
        run = lambda x: blk(x)  # noqa: E731
    else:
        blk = DecoderBlock(C, H, FF, cross_attention=kind == "decoder-cross", **opts)
        use_fast_paths(blk)
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


def test_the_fast_paths_write_in_place_only_without_a_graph(monkeypatch):
    done = []
    real = inplace.add
    monkeypatch.setattr(inplace, "add", lambda x, u: done.append(writable(u)) or real(x, u))
    blk = use_fast_paths(EncoderBlock(C, H, FF))
    x = torch.randn(2, 7, C)
    blk(x)
    with torch.no_grad():
        blk(x)
    assert done == [False, False, True, True]  # two sums a block, with and without a graph


def test_a_tensor_a_hook_has_seen_is_never_overwritten():
    """Under no_grad the fast paths write in place; the cache still holds what each hook point
    saw, as the reference code computes it."""
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=40, d_model=C, n_head=H, n_layer=2, max_len=16)
    model = DecoderLM(cfg).eval()
    ids = torch.randint(0, 40, (2, 9))
    with torch.no_grad():
        _, fast = model.run_with_cache(ids)
        model.use_fast_paths(False)
        _, ref = model.run_with_cache(ids)
    assert fast.keys() == ref.keys()
    for name in ref:
        torch.testing.assert_close(fast[name], ref[name], rtol=0, atol=1e-6, msg=name)
