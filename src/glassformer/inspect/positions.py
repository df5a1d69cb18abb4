"""The positional-encoding matrix of a model (notes, appendix "Positional encoding"):
x̃_n = x_n + r_n, R = (r_0, r_1, ...)ᵀ, sinusoidal or learned; rotary rotates q and k instead."""

from __future__ import annotations

from torch import Tensor, nn

from ..models.inputs import InputEmbedding
from ..nn.positional import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
)

__all__ = ["positional_matrix"]

DEFAULT_POSITIONS = 64


def positional_matrix(model: nn.Module, n_positions: int | None = None) -> tuple[str, dict]:
    """(title, {panel title: (matrix, x-axis label)}) for the first positional encoding in
    ``model`` (a model, the encoder or decoder of an encoder-decoder, or a
    PositionalEncoding); rows = positions
    0..n_positions-1 (after a learned encoding's ``position_offset``)."""
    encoding, offset = _find(model)
    available = encoding.max_len - offset
    n = min(available, DEFAULT_POSITIONS) if n_positions is None else n_positions
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= available:
        raise ValueError(f"n_positions={n_positions!r} is out of range: allowed 1..{available}")
    rows = slice(offset, offset + n)
    if isinstance(encoding, SinusoidalPositionalEncoding):
        r = encoding.table[rows].float().cpu()
        title = f"sinusoidal ({encoding.layout}) {encoding.formula}, base {encoding.base:g}"
        return title, _with_gram("R (position × feature)", r)
    if isinstance(encoding, LearnedPositionalEncoding):
        r = encoding.weight[rows].detach().float().cpu()
        return "learned positional encoding r_n = W_p[:, n]", _with_gram(
            "W_pᵀ (position × feature)", r
        )
    if isinstance(encoding, RotaryEmbedding):
        cos, sin = encoding.cos[rows].float().cpu(), encoding.sin[rows].float().cpu()
        title = f"rotary (RoPE): q, k rotated by n·θ_j, θ_j = base^(-2j/D), base {encoding.base:g}"
        return title, {"cos(n·θ_j)": (cos, "j"), "sin(n·θ_j)": (sin, "j")}
    raise ValueError(
        f"positional encoding {type(encoding).__name__} has no matrix to draw "
        "(positional='none' adds r_n = 0); allowed: sinusoidal, learned, rotary"
    )


def _with_gram(label: str, r: Tensor) -> dict[str, tuple[Tensor, str]]:
    return {label: (r, "feature i"), "R Rᵀ: r_n · r_m": (r @ r.T, "position m")}


def _find(model: nn.Module) -> tuple[PositionalEncoding, int]:
    if isinstance(model, PositionalEncoding):
        return model, 0
    for m in model.modules():
        if isinstance(m, InputEmbedding):
            return m.pos_embed, m.position_offset
    for m in model.modules():
        if isinstance(m, PositionalEncoding):
            return m, 0
    raise ValueError(
        f"{type(model).__name__} has no positional encoding; allowed: a glassformer model, its "
        "encoder or decoder, or a PositionalEncoding"
    )
