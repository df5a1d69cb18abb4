"""The sinusoidal encoding's numbers: the table r_n and the shift matrix M (notes, appendix
"Positional encoding"; "Brief Notes on Transformers", Positional Encodings).

Plain functions of (position, feature), float64, with no module or parameter:
``SinusoidalPositionalEncoding`` (nn/positional.py) adds rows of ``sinusoid_table``, and
``shift_matrix`` is the one linear map that moves every row a position on.

Formulas (base = 10000 by default, C = d_model, ω_m = base^{-2m/C} the m-th frequency):

    interleaved:  r_n^(i) = sin(n / base^{i/C})        for even i
                  r_n^(i) = cos(n / base^{(i-1)/C})    for odd i
    split:        r_n^(j) = sin(n / base^{2j/C})          for j < C/2
                  r_n^(j) = cos(n / base^{2(j-C/2)/C})    for j >= C/2

Either layout holds the pair (sin nω_m, cos nω_m), at features (2m, 2m+1) interleaved or
(m, m + C/2) split. Moving n -> n+s rotates each pair by the angle sω_m, so
r_{n+s} = M^s r_n with M a fixed block rotation, the same for every n.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["POSITIONAL_LAYOUTS", "SINUSOID_FORMULAS", "shift_matrix", "sinusoid_table"]

POSITIONAL_LAYOUTS = ("interleaved", "split")
"""Where the sin and cos of a frequency sit in the sinusoid (ModelConfig.positional_layout)."""

SINUSOID_FORMULAS = {
    "interleaved": "r_n^(i) = sin(n / base^(i/C)) (i even), cos(n / base^((i-1)/C)) (i odd)",
    "split": "r_n^(j) = sin(n / base^(2j/C)) (j < C/2), cos(n / base^(2(j-C/2)/C)) (j ≥ C/2)",
}


def sinusoid_table(
    n_positions: int, d_model: int, base: float = 10000.0, layout: str = "interleaved"
) -> Tensor:
    """R (n_positions, d_model), float64: row n is r_n of the sinusoidal encoding in
    ``layout`` (module docstring). "split" needs an even d_model (a sin half and a cos half);
    "interleaved" with an odd d_model ends on a sine without its cosine."""
    _check_layout(layout, d_model)
    n = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (N, 1)
    i = torch.arange(d_model)  # (C,)
    if layout == "interleaved":
        pair, is_sin = i // 2, i % 2 == 0  # feature i: pair ⌊i/2⌋, sin when i is even
    else:
        half = d_model // 2
        pair, is_sin = i % half, i < half  # feature j: pair j mod C/2, sin when j < C/2
    angle = n / _wavelengths(d_model, base)[pair]  # (N, C): n ω_m = n / base^{2m/C}
    return torch.where(is_sin, angle.sin(), angle.cos())  # (N, C)


def shift_matrix(
    d_model: int, *, layout: str = "interleaved", base: float = 10000.0, steps: int = 1
) -> Tensor:
    """The fixed map that moves the sinusoidal encoding ``steps`` positions on: M^steps,
    float64 (d_model, d_model), with r_{n+steps} = M^steps r_n for every n ("Brief Notes on
    Transformers", Positional Encodings: shifting k -> k+1 is one linear map, the same for
    all k). For the rows of a table R that is R[n + steps] = R[n] @ M^stepsᵀ.

    Each pair (sin nω, cos nω) of frequency ω = base^{-2m/C} is rotated by the angle s·ω:

        [sin (n+s)ω; cos (n+s)ω] = [[cos sω, sin sω], [−sin sω, cos sω]] [sin nω; cos nω]

    so M is orthogonal, M^s M^t = M^{s+t}, and ``steps`` < 0 shifts back (M^{-1} = Mᵀ).
    An odd d_model is refused: its last sine has no cosine, and sin (n+1)ω is not a linear
    function of sin nω alone."""
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise ValueError(f"steps={steps!r} is not allowed: an int (negative shifts back)")
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(
            f"d_model={d_model!r} has no shift matrix: allowed an even int >= 2 (each sine "
            "needs its cosine for n -> n+1 to be linear)"
        )
    _check_layout(layout, d_model)
    half = d_model // 2
    m = torch.arange(half)
    sin_at, cos_at = (2 * m, 2 * m + 1) if layout == "interleaved" else (m, m + half)
    angle = steps / _wavelengths(d_model, base)  # (C/2,): s ω_m = s / base^{2m/C}
    c, s = angle.cos(), angle.sin()
    out = torch.zeros(d_model, d_model, dtype=torch.float64)
    out[sin_at, sin_at], out[sin_at, cos_at] = c, s  # sin (n+s)ω = cos sω·sin nω + sin sω·cos nω
    out[cos_at, sin_at], out[cos_at, cos_at] = -s, c  # cos (n+s)ω = −sin sω·sin nω + cos sω·cos nω
    return out


def _wavelengths(d_model: int, base: float) -> Tensor:
    """1 / ω_m = base^{2m/C} for m = 0..⌈C/2⌉-1, float64."""
    m = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    return base ** (2 * m / d_model)


def _check_layout(layout: str, d_model: int) -> None:
    if layout not in POSITIONAL_LAYOUTS:
        raise ValueError(
            f"layout={layout!r} is not a sinusoid layout; allowed: {', '.join(POSITIONAL_LAYOUTS)}"
        )
    if layout == "split" and d_model % 2:
        raise ValueError(
            f"layout='split' needs an even d_model (a sin half and a cos half), got {d_model}"
        )
