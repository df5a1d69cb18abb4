"""Circuits and the residual stream ("Brief Notes on Transformers"; Elhage et al. (2021), "A
Mathematical Framework for Transformer Circuits"): the attention layer as a sum of heads,
H(x) = Σ_j h_j(x), each head h(x) = A(x) · x · S, and the positional encodings.

    shift_matrix   the fixed map M with r_{k+1} = M r_k of the sinusoidal encoding
                   (glassformer.nn.positional), in either layout
"""

from ..nn.positional import shift_matrix

__all__ = ["shift_matrix"]
