"""Attention is permutation-covariant ("Brief Notes on Transformers"): with no positional
encoding, h(Px) = P h(x) for every head, so every term of the residual stream and every head's
pattern move with the tokens; a positional encoding breaks it. float64."""

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import decompose_resid, stack_head_results
from glassformer.models import EncoderMLM
from glassformer.models.config import ModelConfig

V, T = 23, 7
TOL = dict(atol=1e-10, rtol=1e-10)


def _encoder(positional: str) -> EncoderMLM:
    torch.manual_seed(0)
    config = ModelConfig(
        family="encoder",
        vocab_size=V,
        max_len=16,
        d_model=24,
        n_head=3,
        n_layer=2,
        positional=positional,
        dropout=0.0,
    )
    return EncoderMLM(config).double().eval()


def test_each_head_is_permutation_covariant_without_positions():
    model = _encoder("none")
    ids = torch.randint(0, V, (2, T), generator=torch.Generator().manual_seed(1))
    perm = torch.randperm(T, generator=torch.Generator().manual_seed(2))
    assert not torch.equal(perm, torch.arange(T))
    _, cache = model.run_with_cache(ids)
    _, permuted = model.run_with_cache(ids[:, perm])

    heads, heads_p = stack_head_results(cache), stack_head_results(permuted)  # (L·H, B, T, C)
    assert heads.labels == heads_p.labels and len(heads) == 2 * 3
    assert_close(heads_p.values, heads.values[:, :, perm], **TOL)  # h(Px) = P h(x)
    terms, terms_p = decompose_resid(cache), decompose_resid(permuted)
    assert_close(terms_p.values, terms.values[:, :, perm], **TOL)
    for layer in range(2):  # A(Px) = P A(x) Pᵀ
        pattern = cache["pattern", layer]  # (B, H, T, T)
        assert_close(permuted["pattern", layer], pattern[:, :, perm][..., perm], **TOL)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_positions_break_the_covariance(positional):
    model = _encoder(positional)
    ids = torch.randint(0, V, (1, T), generator=torch.Generator().manual_seed(1))
    perm = torch.randperm(T, generator=torch.Generator().manual_seed(2))
    _, cache = model.run_with_cache(ids)
    _, permuted = model.run_with_cache(ids[:, perm])
    moved = stack_head_results(cache).values[:, :, perm]
    assert not torch.allclose(stack_head_results(permuted).values, moved, atol=1e-6)
