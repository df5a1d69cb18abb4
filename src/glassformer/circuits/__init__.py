"""Circuits: a transformer read as a sum of terms in its residual stream ("Brief Notes on
Transformers": x1 = H(x0) + x0, H(x) = Σ_j h_j(x), h(x) = A(x) · x · S; Elhage et al. (2021),
"A Mathematical Framework for Transformer Circuits"), for every model glassformer runs.

Built on the hook points (glassformer.models.hooked): an analysis of activations takes the cache
of one pass, ``out, cache = circuit_cache(model, input_ids)``, and reads the model from
``cache.model``; an analysis of weights takes the model.

    decompose_resid(cache), accumulated_resid(cache)   the stream as labelled terms (Components)
    stack_head_results(cache)                          every head's term h_j(x)
    logit_attribution(cache, tokens), logit_lens(...)  direct shares of a logit; top-k per layer
    ov_matrix(model, layer, head), qk_matrix(...)      S and Y, factored (FactoredMatrix)
    full_ov_circuit(...), full_qk_circuit(...)         W_E S W_U and W_E Y W_Eᵀ
    copying_score(matrix)                              eigenvalue positivity Σλ / Σ|λ|
    composition_scores(model, kind="q"|"k"|"v")        (L, H, L, H) between heads
    ablate(model, inputs, heads=..., how=...)          zero-, mean- and resample-ablation
    patch_residual(...), patch_heads(...)              activation patching, clean into corrupted
    logit_difference(model, right, wrong)              the metric: logit of right minus wrong
    patch_blocks(...), patch_heads_every(...)          several patching grids in one call
    patch_path(...), patch_path_senders(...)           path patching, sender → receiver
    shift_matrix(d_model, layout=...)                  M with r_{k+1} = M r_k (sinusoidal)
"""

from ..nn.sinusoid import shift_matrix
from .ablation import ablate, ablation_hooks
from .attribution import LogitAttribution, logit_attribution
from .cached import circuit_cache, circuit_names
from .components import Components
from .composition import composition_score, composition_scores
from .factored import FactoredMatrix
from .lens import LogitLens, logit_lens
from .metrics import logit_difference
from .norms import FrozenNorm, freeze_norm
from .patching import normalized, patch_heads, patch_residual
from .patching_every import patch_blocks, patch_heads_every
from .path_patching import patch_path, patch_path_receivers, patch_path_senders
from .stream import accumulated_resid, decompose_resid, stack_head_results
from .token_circuits import copying_score, folded_unembedding, full_ov_circuit, full_qk_circuit
from .weights import QKBias, head_weights, ov_bias, ov_matrix, qk_bias, qk_matrix

__all__ = [
    "Components",
    "FactoredMatrix",
    "FrozenNorm",
    "LogitAttribution",
    "LogitLens",
    "QKBias",
    "ablate",
    "ablation_hooks",
    "accumulated_resid",
    "circuit_cache",
    "circuit_names",
    "composition_score",
    "composition_scores",
    "copying_score",
    "decompose_resid",
    "folded_unembedding",
    "freeze_norm",
    "full_ov_circuit",
    "full_qk_circuit",
    "head_weights",
    "logit_attribution",
    "logit_difference",
    "logit_lens",
    "normalized",
    "ov_bias",
    "ov_matrix",
    "patch_blocks",
    "patch_heads",
    "patch_heads_every",
    "patch_path",
    "patch_path_receivers",
    "patch_path_senders",
    "patch_residual",
    "qk_bias",
    "qk_matrix",
    "shift_matrix",
    "stack_head_results",
]
