"""The split sinusoid ("Brief Notes on Transformers", Positional Encodings: sin for j < E/2,
cos for j >= E/2) is the table Hugging Face's Marian models use, which lays the features out
in the same two halves (MarianSinusoidalPositionalEmbedding.create_weight)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from transformers.models.marian.modeling_marian import (
    MarianSinusoidalPositionalEmbedding,
)

from glassformer.nn.positional import SinusoidalPositionalEncoding


@pytest.mark.parametrize("d", [2, 16, 64])
def test_split_table_equals_marians(d):
    marian = MarianSinusoidalPositionalEmbedding(128, d).create_weight()  # (128, d) float32
    ours = SinusoidalPositionalEncoding(d, 128, layout="split").table
    torch.testing.assert_close(ours, marian, rtol=0, atol=1e-6)
    interleaved = SinusoidalPositionalEncoding(d, 128).table
    assert d == 2 or not torch.allclose(interleaved, marian, atol=1e-3)  # the other layout
