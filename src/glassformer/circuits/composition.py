"""Q-, K- and V-composition between heads of different layers (Elhage et al. (2021), "A
Mathematical Framework for Transformer Circuits", "Composition scores").

A head of an earlier layer writes x S_1 into the residual stream (its OV matrix, "Brief Notes on
Transformers": h(x) = A(x) · x · S). A head of a later layer reads the stream three ways, and
in the row convention (scores x_n Y x_mᵀ, output A x S) the earlier head's output enters as

    Q-composition: queries x_n = y S_1    scores  y S_1 Y_2 x_mᵀ      matrix S_1 Y_2
    K-composition: keys    x_m = y S_1    scores  x_n Y_2 S_1ᵀ yᵀ     matrix S_1 Y_2ᵀ (transposed)
    V-composition: values  x_m = y S_1    output  A y S_1 S_2         matrix S_1 S_2

and the score is how much of the two matrices' size survives their product:

    ‖S_1 M_2‖_F / (‖S_1‖_F ‖M_2‖_F),   M_2 = Y_2, Y_2ᵀ or S_2,

between 0 (the later head reads nothing the earlier one writes) and 1. These are
TransformerLens's ``all_composition_scores`` (OV @ QK, OV @ QK.T, OV @ OV); the scale 1/√d_k of
Y cancels. Norms between the layers are ignored, as Elhage et al. ignore them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .factored import FactoredMatrix
from .weights import ov_matrix, qk_matrix

__all__ = ["COMPOSITIONS", "composition_score", "composition_scores"]

COMPOSITIONS = ("q", "k", "v")


def composition_score(earlier: FactoredMatrix, later: FactoredMatrix) -> Tensor:
    """‖earlier @ later‖_F / (‖earlier‖_F ‖later‖_F), batch dimensions broadcast: ``earlier``
    an OV matrix S_1, ``later`` the reading matrix of a later head (Y_2 for Q-, Y_2ᵀ for K-,
    S_2 for V-composition; see the module docstring). NaN when either is 0."""
    return (earlier @ later).norm() / (earlier.norm() * later.norm())


def composition_scores(model: nn.Module, kind: str = "q", *, stack: str | None = None) -> Tensor:
    """(L, H, L, H): entry [l1, h1, l2, h2] the ``kind`` ("q", "k" or "v") composition score of
    head h1 of layer l1 into head h2 of layer l2, for l1 < l2, and 0 where layer l1 is not
    earlier than l2 (as TransformerLens). The self-attention heads of ``stack`` (default: the
    decoder when there is one); for a cross-attention head give its matrices to
    ``composition_score`` (``ov_matrix(..., kind="cross")``)."""
    if kind not in COMPOSITIONS:
        raise ValueError(f"kind must be one of {COMPOSITIONS}, got {kind!r}")
    ov = ov_matrix(model, None, stack=stack)  # (L, H, E, E)
    if kind == "v":
        later = ov
    else:
        qk = qk_matrix(model, None, stack=stack)
        later = qk if kind == "q" else qk.T  # K-composition reads Y_2ᵀ
    n_layer, n_head = ov.shape[:2]
    earlier, later = _flat(ov), _flat(later)  # (L·H, E, E) each
    scores = _product_norms(earlier, later) / (earlier.norm()[:, None] * later.norm()[None, :])
    scores = scores.view(n_layer, n_head, n_layer, n_head)
    layers = torch.arange(n_layer, device=scores.device)
    before = (layers[:, None] < layers[None, :])[:, None, :, None]  # (L, 1, L, 1): l1 < l2
    return torch.where(before, scores, torch.zeros((), dtype=scores.dtype, device=scores.device))


def _flat(m: FactoredMatrix) -> FactoredMatrix:
    """(L, H, E, E) as (L·H, E, E), layer-major."""
    return FactoredMatrix(m.A.flatten(0, 1), m.B.flatten(0, 1))


def _product_norms(left: FactoredMatrix, right: FactoredMatrix) -> Tensor:
    """‖L_i R_j‖_F for every pair (N, M), L_i = A_i B_i and R_j = C_j D_j: with A_i = Q_i P_i
    and D_jᵀ = Q'_j P'_j (thin QR), ‖L_i R_j‖_F = ‖P_i (B_i C_j) P'_jᵀ‖_F, a small matrix per
    pair, so no E×E product is formed."""
    _, p_left = torch.linalg.qr(left.A)  # (N, k1, r1)
    _, p_right = torch.linalg.qr(right.B.mT)  # (M, k2, r2)
    a = p_left @ left.B  # (N, k1, E)
    b = right.A @ p_right.mT  # (M, E, k2)
    core = torch.einsum("ide,jef->ijdf", a, b)  # (N, M, k1, k2)
    return core.flatten(-2).norm(dim=-1)
