"""fast/aligned.py: the unembedding and the cross-entropy written into rows padded to 64 floats
give exactly what F.linear and F.cross_entropy give, values and gradients."""

import pytest
import torch
import torch.nn.functional as F

from glassformer.config import ModelConfig
from glassformer.fast import aligned, use_fast_paths
from glassformer.models import DecoderLM
from glassformer.nn import Unembedding


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(96, 32), (2, 48, 32)])
def test_linear_equals_f_linear(bias, shape):
    torch.manual_seed(0)
    h = torch.randn(*shape, requires_grad=True)
    w = torch.randn(1031, 32, requires_grad=True)
    b = torch.randn(1031, requires_grad=True) if bias else None
    out = aligned.linear(h, w, b)
    ref = F.linear(h, w, b)
    assert out.shape == ref.shape and out.stride(-2) == 1088  # rows of 1031 padded to 17 * 64
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-5)
    g = torch.randn_like(ref)
    inputs = [h, w] + ([b] if bias else [])
    for got, want in zip(
        torch.autograd.grad(out, inputs, g), torch.autograd.grad(ref, inputs, g), strict=True
    ):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-4)


def test_cross_entropy_sum_equals_f_cross_entropy():
    torch.manual_seed(0)
    z = torch.randn(200, 1031, requires_grad=True)
    y = torch.randint(0, 1031, (200,))
    y[::5] = -100
    got = aligned.cross_entropy_sum(z, y, -100)
    want = F.cross_entropy(z, y, ignore_index=-100, reduction="sum")
    torch.testing.assert_close(got, want, rtol=1e-6, atol=0)
    (g_got,) = torch.autograd.grad(got * 0.7, z)
    (g_want,) = torch.autograd.grad(want * 0.7, z)
    torch.testing.assert_close(g_got, g_want, rtol=0, atol=1e-7)
    assert g_got.stride() == (1088, 1)
    assert g_got[::5].abs().max() == 0  # unscored rows get no gradient


def test_cross_entropy_sum_with_nothing_scored_is_zero():
    z = torch.randn(70, 1031, requires_grad=True)
    loss = aligned.cross_entropy_sum(z, torch.full((70,), -100), -100)
    loss.backward()
    assert loss.item() == 0 and z.grad.abs().max() == 0


@pytest.mark.parametrize("bad", [1031, -1, -101])
def test_cross_entropy_sum_refuses_labels_out_of_range(bad):
    y = torch.zeros(70, dtype=torch.long)
    y[3] = bad
    with pytest.raises(ValueError, match=rf"labels must be in \[0, 1031\) or -100.*got {bad}"):
        aligned.cross_entropy_sum(torch.randn(70, 1031), y, -100)


def test_when_the_aligned_path_is_taken():
    rows = torch.randn(64, 32)
    assert aligned.pays(rows, 1031)
    assert not aligned.pays(rows, 1024)  # already a multiple of 64
    assert not aligned.pays(rows, 1000)  # too small to matter
    assert not aligned.pays(rows[:63], 1031)  # too few rows (decoding one token)
    assert not aligned.pays(rows.double(), 1031)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not aligned.pays(rows, 1031)


def test_language_model_loss_and_gradients_equal_the_plain_path(monkeypatch):
    """DecoderLM with a vocabulary of 1031 (tied head): the aligned path against the plain
    F.linear + F.cross_entropy one."""
    torch.manual_seed(0)
    cfg = ModelConfig(family="decoder", vocab_size=1031, max_len=32, d_model=32, n_layer=1,
                      n_head=2, dropout=0.0)  # fmt: skip
    model = DecoderLM(cfg)
    ids = torch.randint(0, 1031, (4, 32))
    out = model(ids, labels=ids)
    grads = torch.autograd.grad(out.loss, list(model.parameters()))
    assert out.logits.stride(-2) == 1088  # the aligned path ran
    monkeypatch.setattr(aligned, "pays", lambda *a: False)
    plain = model(ids, labels=ids)
    assert plain.logits.is_contiguous()
    torch.testing.assert_close(out.logits, plain.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(out.loss, plain.loss, rtol=1e-6, atol=0)
    for got, want in zip(grads, torch.autograd.grad(plain.loss, list(model.parameters())),
                         strict=True):  # fmt: skip
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_unembedding_uses_it_only_where_it_pays():
    u = use_fast_paths(Unembedding(32, 1031))
    assert u(torch.randn(2, 40, 32)).stride(-2) == 1088
    assert u(torch.randn(1, 1, 32)).is_contiguous()  # one decoding step: plain F.linear


def test_generation_is_unchanged(monkeypatch):
    """A 70-token prompt (its prefill takes the aligned path): beam search and sampling give
    the tokens of the plain path."""
    from glassformer.generation import GenerationConfig, generate

    torch.manual_seed(0)
    cfg = ModelConfig(family="decoder", vocab_size=1031, max_len=128, d_model=32, n_layer=2,
                      n_head=2)  # fmt: skip
    model = DecoderLM(cfg).eval()
    ids = torch.randint(5, 1031, (2, 70))
    settings = [dict(num_beams=3), dict(temperature=0.9, top_k=50, seed=1)]

    def run():
        return [generate(model, ids, GenerationConfig(max_new_tokens=12, **s)).sequences
                for s in settings]  # fmt: skip

    aligned_path = run()
    monkeypatch.setattr(aligned, "pays", lambda *a: False)
    for got, want in zip(aligned_path, run(), strict=True):
        assert torch.equal(got, want)
