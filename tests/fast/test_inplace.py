"""fast/inplace.py: without an autograd graph the feed-forward activation overwrites the
hidden layer. The results equal those computed with a graph, the caller's input is never
written, and with a graph nothing is done in place."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from glassformer.fast import inplace, use_fast_paths
from glassformer.fast.inplace import InplaceFeedForward
from glassformer.models import DecoderLM
from glassformer.models.config import ModelConfig
from glassformer.nn import DecoderBlock, EncoderBlock, FeedForward

C, H, FF = 16, 4, 48


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
    assert y.dtype == torch.float32  # X (float32) + F(X) (bf16) promotes to float32
    with torch.no_grad():
        want = blk(x)
    torch.testing.assert_close(y, want, rtol=0, atol=0.1)


def test_the_activation_is_written_in_place_only_without_a_graph(monkeypatch):
    done = []
    real = inplace._IN_PLACE["relu"]
    monkeypatch.setitem(inplace._IN_PLACE, "relu", lambda h: done.append(h.shape) or real(h))
    blk = use_fast_paths(EncoderBlock(C, H, FF, activation="relu"))
    assert type(blk.mlp) is InplaceFeedForward
    x = torch.randn(2, 7, C)
    blk(x)
    assert done == []  # a graph is recorded: the reference forward
    with torch.no_grad():
        blk(x)
    assert done == [(2, 7, FF)]


def test_fast_paths_off_give_back_exactly_the_reference_classes():
    cfg = ModelConfig(vocab_size=40, d_model=C, n_head=H, n_layer=2, max_len=16)
    model = DecoderLM(cfg)
    keys = list(model.state_dict())
    assert {type(b.mlp) for b in model.blocks} == {InplaceFeedForward}
    model.use_fast_paths(False)
    assert {type(b.mlp) for b in model.blocks} == {FeedForward}
    assert model.fast_paths is False and list(model.state_dict()) == keys
    model.use_fast_paths(True)
    assert {type(b.mlp) for b in model.blocks} == {InplaceFeedForward}


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


def test_the_reference_code_and_its_tests_need_no_fast_package():
    """glassformer.fast can be deleted: glassformer.nn runs with the package blocked, and the
    tests of the reference code (tests/nn) do not import it."""
    code = (
        "import sys; sys.modules['glassformer.fast'] = None\n"
        "import torch, glassformer.nn as nn\n"
        "enc = nn.Encoder(2, 8, 2, 16).eval()\n"
        "x = torch.randn(2, 5, 8)\n"
        "with torch.no_grad(): y = enc(x, nn.padding_mask(torch.tensor([5, 3]), 5))\n"
        "print(tuple(y.shape), sys.modules['glassformer.fast'])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(2,", "5,", "8)", "None"]
    tests_nn = Path(__file__).resolve().parents[1] / "nn"
    for path in tests_nn.rglob("*.py"):
        assert "glassformer.fast" not in path.read_text(encoding="utf-8"), path
