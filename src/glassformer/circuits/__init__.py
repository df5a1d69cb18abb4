"""Circuits: reading a transformer as the sum of its heads and feed-forwards in the residual
stream ("Brief Notes on Transformers"; Elhage et al., 2021, "A Mathematical Framework for
Transformer Circuits"), built on the hook points of glassformer.models.hooked."""

from .ablation import ablate, ablation_hooks

__all__ = [
    "ablate",
    "ablation_hooks",
]
