"""Normalisation layers (notes, appendix "Layer normalization and batch normalization").

LayerNorm normalises each token over its C features:
    μ_i = (1/C) Σ_j x_ij,   σ²_i = (1/C) Σ_j (x_ij - μ_i)²,
    y_ij = γ_j (x_ij - μ_i) / √(σ²_i + ε) + β_j
RMSNorm drops the centring: y_ij = γ_j x_ij / √((1/C) Σ_j x_ij² + ε).
BatchNorm normalises each feature j over the batch instead, μ_j = mean_i x_ij, with i running
over every *real* token of the batch (padded positions are skipped); in training it uses these
batch statistics and keeps moving averages, in eval it uses the moving averages. Its training
statistics mix every position of the batch, so under causal attention position n would see the
tokens after it: the models take it in encoders only (ModelConfig refuses it elsewhere).

All three take ``forward(x, token_mask=None)`` with x (B, T, C) and token_mask (B, T) True at real
tokens, so blocks can hold any of them; only BatchNorm needs the mask. Each has a hook point,
``hook_normalized`` (B, T, C), on its output y (TransformerLens's name).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .arguments import fraction, positive_int, positive_number
from .hooks import HookPoint

__all__ = ["NORM_KINDS", "BatchNorm", "LayerNorm", "RMSNorm", "make_norm"]

NORM_KINDS = ("layer", "rms", "batch")
"""The norms `make_norm` builds (ModelConfig.norm)."""


class LayerNorm(nn.Module):
    """y = γ ⊙ (x - μ) / √(σ² + ε) + β over the last dimension (β optional).

    Args:
        d_model: the width C normalised over (γ and β have C entries).
        eps: ε, added to the variance under the square root; > 0.
        bias: learn β (False: none, as in models without biases).

    Raises:
        ValueError: ``d_model`` not a positive int, or ``eps`` not positive.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        d_model, self.eps = _checked("LayerNorm", d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None
        self.hook_normalized = HookPoint()

    def forward(self, x: Tensor, token_mask: Tensor | None = None) -> Tensor:
        y = F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)
        return self.hook_normalized(y)


class RMSNorm(nn.Module):
    """y = γ ⊙ x / √(mean(x²) + ε) over the last dimension.

    Args:
        d_model: the width C normalised over (γ has C entries).
        eps: ε, added to the mean square under the square root; > 0.

    Raises:
        ValueError: ``d_model`` not a positive int, or ``eps`` not positive.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        d_model, self.eps = _checked("RMSNorm", d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.hook_normalized = HookPoint()

    def forward(self, x: Tensor, token_mask: Tensor | None = None) -> Tensor:
        return self.hook_normalized(F.rms_norm(x, self.weight.shape, self.weight, self.eps))


class BatchNorm(nn.Module):
    """Per-feature normalisation over the real tokens of the batch (padding skipped).

    Training: y = γ (x - μ_B)/√(σ²_B + ε) + β with μ_B, σ²_B (biased) over real tokens, and
    running_mean/var ← (1 - momentum)·running + momentum·batch (unbiased variance), as in
    torch.nn.BatchNorm1d. Eval: the running statistics replace μ_B, σ²_B.

    Args:
        d_model: the number of features C (γ, β and the running statistics have C entries).
        eps: ε, added to the variance under the square root; > 0.
        momentum: the weight of a batch in the running statistics, in [0, 1].

    Raises:
        ValueError: ``d_model`` not a positive int, ``eps`` not positive, or ``momentum``
            outside [0, 1].
    """

    def __init__(self, d_model: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        d_model, self.eps = _checked("BatchNorm", d_model, eps)
        self.momentum = fraction("BatchNorm", "momentum", momentum, closed=True)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.register_buffer("running_mean", torch.zeros(d_model))
        self.register_buffer("running_var", torch.ones(d_model))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.hook_normalized = HookPoint()

    def forward(self, x: Tensor, token_mask: Tensor | None = None) -> Tensor:
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            # (N, C): the real tokens of the batch, every position if there is no mask
            real = x.reshape(-1, x.shape[-1]) if token_mask is None else x[token_mask]
            n = real.shape[0]
            if n < 2:
                raise ValueError(
                    f"BatchNorm in training needs at least 2 real tokens in the batch, got {n}"
                )
            var, mean = torch.var_mean(real, dim=0, correction=0)  # (C,), (C,)
            with torch.no_grad():
                m = self.momentum
                self.running_mean.lerp_(mean, m)
                self.running_var.lerp_(var * n / (n - 1), m)
                self.num_batches_tracked += 1
        y = (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
        return self.hook_normalized(y)


def _checked(who: str, d_model: object, eps: object) -> tuple[int, float]:
    return positive_int(who, "d_model", d_model), positive_number(who, "eps", eps)


def make_norm(kind: str, d_model: int, eps: float = 1e-5, bias: bool = True) -> nn.Module:
    """Build the norm named ``kind``.

    Args:
        kind: "layer" (`LayerNorm`), "rms" (`RMSNorm`) or "batch" (`BatchNorm`).
        d_model: the width normalised over.
        eps: ε of the norm.
        bias: LayerNorm's β (the other two ignore it: RMSNorm has none, BatchNorm always one).

    Returns:
        The norm module.

    Raises:
        ValueError: ``kind`` is not one of NORM_KINDS.
    """
    if kind == "layer":
        return LayerNorm(d_model, eps, bias)
    if kind == "rms":
        return RMSNorm(d_model, eps)
    if kind == "batch":
        return BatchNorm(d_model, eps)
    raise ValueError(f"norm {kind!r} is not known; choose one of {NORM_KINDS}")
