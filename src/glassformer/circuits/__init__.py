"""Circuits: reading a transformer as the notes' "Brief Notes on Transformers" and Elhage et al.
(2021), "A Mathematical Framework for Transformer Circuits", describe it: each head as
h(x) = A(x) · x · S with its OV matrix S and QK matrix Y.

    ov_matrix(model, layer, head), qk_matrix(...)      S and Y, factored (FactoredMatrix)
    full_ov_circuit(...), full_qk_circuit(...)         W_E S W_U and W_E Y W_Eᵀ
    copying_score(matrix)                              eigenvalue positivity Σλ / Σ|λ|
    composition_scores(model, kind="q"|"k"|"v")        (L, H, L, H) between heads
"""

from .composition import composition_score, composition_scores
from .factored import FactoredMatrix
from .token_circuits import copying_score, full_ov_circuit, full_qk_circuit
from .weights import QKBias, head_weights, ov_bias, ov_matrix, qk_bias, qk_matrix

__all__ = [
    "FactoredMatrix",
    "QKBias",
    "composition_score",
    "composition_scores",
    "copying_score",
    "full_ov_circuit",
    "full_qk_circuit",
    "head_weights",
    "ov_bias",
    "ov_matrix",
    "qk_bias",
    "qk_matrix",
]
