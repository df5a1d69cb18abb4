"""The frozen norm: a norm made affine by fixing its statistics at the values of one run.

A norm is not linear in its input: LayerNorm(y) = γ ⊙ (y − mean(y)) / s + β with
s = √(var(y) + ε) depends on y. Once s is taken from the actual y of a run and held fixed,
the map is affine, so when y = Σ_i c_i is a sum of components (the residual stream as a sum of
heads and feed-forwards: "Brief Notes on Transformers", and Elhage et al. (2021), "A
Mathematical Framework for Transformer Circuits")

    Norm(y) = Σ_i L(c_i) + b,     L(c) = γ ⊙ (c − mean(c)) / s,   b = β

exactly, to float rounding. RMSNorm: L(c) = γ ⊙ c / √(mean(y²) + ε), b = 0. BatchNorm in eval
mode is affine already: L(c) = γ ⊙ c / √(σ²_run + ε), b = β − γ ⊙ μ_run / √(σ²_run + ε). Each
component is carried through the norm as the norm scaled the whole stream, which is how
TransformerLens's ``apply_ln_to_stack`` freezes ``ln_final``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..nn.norms import BatchNorm, LayerNorm, RMSNorm

__all__ = ["FrozenNorm", "freeze_norm"]


@dataclass(eq=False)
class FrozenNorm:
    """One norm with its statistics fixed: ``linear(c)`` = L(c), ``constant`` = b.

    ``inv_scale`` is 1/s per position, (..., 1) (LayerNorm, RMSNorm), or per feature, (C,)
    (BatchNorm); ``weight`` is γ or None; ``center`` says whether L subtracts each
    component's mean over its C features (LayerNorm)."""

    inv_scale: Tensor
    weight: Tensor | None
    center: bool
    constant: Tensor

    def linear(self, c: Tensor) -> Tensor:
        """L(c) for c (..., B, T, C): one component, or a stack of them on leading dimensions."""
        if self.center:
            c = c - c.mean(-1, keepdim=True)
        c = c * self.inv_scale
        return c if self.weight is None else c * self.weight

    def __call__(self, c: Tensor) -> Tensor:
        """L(c) + b: the norm itself for c = the stream it normalised."""
        return self.linear(c) + self.constant


def freeze_norm(norm: nn.Module, y: Tensor) -> FrozenNorm:
    """The norm ``norm`` (a glassformer LayerNorm or RMSNorm) with its scale fixed at the
    value it took on ``y`` (..., C), the actual input it normalised; a BatchNorm as it
    normalises in eval mode (its running statistics; ``y`` is not read), the mode the circuit
    analyses require. The result holds detached tensors: it reads a run, it trains nothing."""
    y = y.detach()
    if isinstance(norm, LayerNorm):
        gamma = norm.weight.detach()
        var, _ = torch.var_mean(y, dim=-1, keepdim=True, correction=0)  # (B, T, 1)
        beta = torch.zeros_like(gamma) if norm.bias is None else norm.bias.detach()
        return FrozenNorm(torch.rsqrt(var + norm.eps), gamma, True, beta)
    if isinstance(norm, RMSNorm):
        gamma = norm.weight.detach()
        inv = torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + norm.eps)  # (B, T, 1)
        return FrozenNorm(inv, gamma, False, torch.zeros_like(gamma))
    if isinstance(norm, BatchNorm):  # eval mode: running statistics, whatever y is
        gamma, beta = norm.weight.detach(), norm.bias.detach()
        inv = torch.rsqrt(norm.running_var + norm.eps)  # (C,)
        return FrozenNorm(inv, gamma, False, beta - norm.running_mean * inv * gamma)
    raise ValueError(
        f"freeze_norm: norm is a {type(norm).__name__}; allowed: glassformer's LayerNorm, "
        "RMSNorm or BatchNorm (glassformer.nn.norms)"
    )
