"""Circuits: reading a transformer as the sum of its heads and feed-forwards in the residual
stream ("Brief Notes on Transformers"; Elhage et al., 2021, "A Mathematical Framework for
Transformer Circuits"), built on the hook points of glassformer.models.hooked."""

from .ablation import ablate, ablation_hooks
from .patching import normalized, patch_heads, patch_residual

__all__ = [
    "ablate",
    "ablation_hooks",
    "normalized",
    "patch_heads",
    "patch_residual",
]
