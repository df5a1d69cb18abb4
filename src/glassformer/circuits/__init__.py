"""Circuits: reading a transformer as the notes' "Brief Notes on Transformers" and Elhage et al.
(2021), "A Mathematical Framework for Transformer Circuits", describe it."""

from .factored import FactoredMatrix

__all__ = ["FactoredMatrix"]
