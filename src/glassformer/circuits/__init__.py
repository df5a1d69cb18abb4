"""Circuits: a transformer read as a sum of terms in its residual stream ("Brief Notes on
Transformers": H(x) = Σ_j h_j(x), h(x) = A(x) · x · S; Elhage et al. (2021), "A Mathematical
Framework for Transformer Circuits"), for every model glassformer runs.

Built on the hook points (glassformer.models.hooked): an analysis takes the cache of one pass,
``out, cache = circuit_cache(model, input_ids)``, and reads the model from ``cache.model``.
"""

from .attribution import LogitAttribution, logit_attribution
from .cached import circuit_cache, circuit_names
from .components import Components
from .lens import LogitLens, logit_lens
from .norms import FrozenNorm, freeze_norm
from .stream import accumulated_resid, decompose_resid, stack_head_results

__all__ = [
    "Components",
    "FrozenNorm",
    "LogitAttribution",
    "LogitLens",
    "accumulated_resid",
    "circuit_cache",
    "circuit_names",
    "decompose_resid",
    "freeze_norm",
    "logit_attribution",
    "logit_lens",
    "stack_head_results",
]
