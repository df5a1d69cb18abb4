"""The shift map of the sinusoidal encoding ("Brief Notes on Transformers", Positional
Encodings): one fixed matrix M moves the positional vector a model adds at k to the one at
k+1, for every k up to its context length, in both layouts."""

from __future__ import annotations

import pytest
import torch

import glassformer.circuits
from glassformer import DecoderLM, ModelConfig
from glassformer.circuits import shift_matrix
from glassformer.nn import positional


def test_circuits_exports_the_shift_matrix():
    assert "shift_matrix" in glassformer.circuits.__all__
    assert shift_matrix is positional.shift_matrix


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_m_moves_the_models_positional_vectors_on_by_one(layout):
    """M r_k = r_{k+1} for k < max_len - 1, read at the model's hook_pos_embed (float32)."""
    config = ModelConfig(
        vocab_size=11, d_model=32, n_head=4, n_layer=1, max_len=64,
        positional="sinusoidal", positional_layout=layout,
    )  # fmt: skip
    model = DecoderLM(config).eval()
    _, cache = model.run_with_cache(torch.randint(0, 11, (1, 64)))
    r = cache["hook_pos_embed"][0].double()  # (T, C): r_0 .. r_63
    M = shift_matrix(32, layout=layout)
    torch.testing.assert_close(r[:-1] @ M.T, r[1:], rtol=0, atol=1e-6)
    torch.testing.assert_close(model.pos_embed.shift_matrix(5), torch.linalg.matrix_power(M, 5))
    other = "split" if layout == "interleaved" else "interleaved"
    assert not torch.allclose(r[:-1] @ shift_matrix(32, layout=other).T, r[1:], atol=1e-2)
