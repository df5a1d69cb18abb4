"""Temperature, top-k and top-p: the tokens kept are exactly those Hugging Face's logits
processors keep on the same logits; and exact properties of the sampler."""

from __future__ import annotations

import pytest
import torch

from glassformer.generation import choose_next, top_k_filter, top_p_filter, warp_logits

transformers = pytest.importorskip("transformers")
from transformers.generation.logits_process import (  # noqa: E402
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)


def _logits(seed: int, b: int = 8, v: int = 500, scale: float = 3.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, v, generator=g) * scale


@pytest.mark.parametrize("k", [1, 2, 10, 37, 499, 500, 1000])
def test_top_k_keeps_what_hf_keeps(k):
    logits = _logits(k)
    ours = top_k_filter(logits, k)
    theirs = TopKLogitsWarper(top_k=k)(None, logits)
    assert torch.equal(ours.isfinite(), theirs.isfinite())
    assert torch.equal(ours, theirs)  # kept logits unchanged, the rest -inf
    assert (ours.isfinite().sum(-1) == min(k, 500)).all()


def test_top_k_keeps_ties_like_hf():
    logits = torch.tensor([[3.0, 1.0, 3.0, 2.0, 2.0, 0.5]])  # the 2nd and 3rd largest tie
    for k in range(1, 7):
        ours = top_k_filter(logits, k)
        assert torch.equal(ours.isfinite(), TopKLogitsWarper(top_k=k)(None, logits).isfinite())
    assert top_k_filter(logits, 3).isfinite().tolist() == [[True, False, True, True, True, False]]


@pytest.mark.parametrize("p", [0.01, 0.1, 0.5, 0.8, 0.9, 0.95, 0.999, 1.0])
@pytest.mark.parametrize("scale", [0.5, 3.0, 10.0])
def test_top_p_keeps_what_hf_keeps(p, scale):
    logits = _logits(int(p * 1000), scale=scale)
    ours = top_p_filter(logits, p)
    theirs = TopPLogitsWarper(top_p=p)(None, logits)
    assert torch.equal(ours.isfinite(), theirs.isfinite())
    kept = ours.isfinite()
    probs = logits.softmax(-1)
    # the nucleus holds probability >= p, and dropping its least likely token would not
    assert ((probs * kept).sum(-1) >= p - 1e-6).all()
    least = probs.masked_fill(~kept, 2.0).min(-1).values
    assert ((probs * kept).sum(-1) - least < p + 1e-6).all() or p == 1.0


@pytest.mark.parametrize(("t", "k", "p"), [(0.7, 20, 0.9), (1.3, 0, 0.8), (0.5, 5, 1.0)])
def test_temperature_then_top_k_then_top_p_like_hf(t, k, p):
    logits = _logits(7)
    theirs = TemperatureLogitsWarper(t)(None, logits)
    if k:
        theirs = TopKLogitsWarper(top_k=k)(None, theirs)
    theirs = TopPLogitsWarper(top_p=p)(None, theirs)
    torch.testing.assert_close(warp_logits(logits, t, k, p), theirs, rtol=0, atol=0)


def test_temperature_zero_is_argmax_and_filters_to_one_token_are_greedy():
    logits = _logits(3)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(choose_next(logits, 0.0), logits.argmax(-1))
    assert torch.equal(choose_next(logits, 1.0, top_k=1, generator=g), logits.argmax(-1))
    assert torch.equal(choose_next(logits, 1.0, top_p=1e-9, generator=g), logits.argmax(-1))


def test_sampling_follows_the_warped_distribution():
    """Draw many times from one row: frequencies match softmax(l / τ) on the top-k tokens."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 5.0, -3.0]]).expand(40000, 6)
    g = torch.Generator().manual_seed(0)
    draws = choose_next(logits, 2.0, top_k=4, generator=g)
    freq = torch.bincount(draws, minlength=6).float() / draws.numel()
    q = torch.tensor([2.0, 1.0, 0.0, -1.0, 5.0, -3.0]) / 2.0
    q[[3, 5]] = float("-inf")  # outside the top 4
    torch.testing.assert_close(freq, q.softmax(-1), atol=0.01, rtol=0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: top_k_filter(x, -1), r"top_k=-1 is not allowed: an int >= 0"),
        (lambda x: top_p_filter(x, 0.0), r"top_p=0.0 is not allowed: a number in \(0, 1\]"),
        (lambda x: top_p_filter(x, 1.5), r"top_p=1.5 is not allowed"),
        (lambda x: warp_logits(x, -0.5), r"temperature=-0.5 is not allowed"),
    ],
)
def test_filter_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call(_logits(0))
