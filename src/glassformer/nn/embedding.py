"""Token embedding and unembedding.

Embedding maps token id x[n] to the column W_e[:, x[n]] ∈ R^D (notes: "Token Embedding"),
optionally scaled by √D as in Vaswani et al.; the input to the first block is
x_n^(0) = W_e[:, x[n]] + W_p[:, n]. Unembedding maps the last hidden vector back to one score
(logit) per vocabulary entry, logits = W_u h (+ b); with weight tying W_u = W_eᵀ.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["TokenEmbedding", "Unembedding"]


class TokenEmbedding(nn.Module):
    """ids (B, T) -> W_e[ids] (· √D if ``scale``) (B, T, C)."""

    def __init__(self, vocab_size: int, d_model: int, *, scale: bool = False) -> None:
        super().__init__()
        if vocab_size < 1 or d_model < 1:
            raise ValueError(
                f"vocab_size and d_model must be positive, got vocab_size={vocab_size}, "
                f"d_model={d_model}"
            )
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))  # W_e, one row per token
        nn.init.normal_(self.weight, std=0.02)
        self.multiplier = math.sqrt(d_model) if scale else 1.0

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def forward(self, ids: Tensor) -> Tensor:
        x = F.embedding(ids, self.weight)  # (B, T, C)
        return x * self.multiplier if self.multiplier != 1.0 else x


class Unembedding(nn.Module):
    """h (B, T, C) -> logits (B, T, V) = h W_uᵀ (+ b); ``tie_to`` shares W_u with an embedding."""

    def __init__(
        self,
        d_model: int,
        vocab_size: int,
        *,
        bias: bool = False,
        tie_to: TokenEmbedding | None = None,
    ) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, vocab_size, bias=bias)
        if tie_to is not None:
            if tie_to.weight.shape != self.proj.weight.shape:
                raise ValueError(
                    f"cannot tie: embedding is {tuple(tie_to.weight.shape)}, unembedding needs "
                    f"{tuple(self.proj.weight.shape)}"
                )
            self.proj.weight = tie_to.weight

    def forward(self, h: Tensor) -> Tensor:
        return self.proj(h)  # (B, T, V): h W_uᵀ (+ b)
