"""Positional encodings: how a token's position n enters the model.

Self-attention is equivariant to permutations of its rows (notes, appendix "Positional
encoding"), so position must be injected. Additive encodings add a vector r_n to each token
embedding, x̃_n = x_n + r_n:

  * sinusoidal (fixed, base 10000, C = d_model): r_n^(i) = sin(n / base^{i/C}) at even i
    and cos(n / base^{(i-1)/C}) at odd i ("interleaved", the default), or a sin half and a cos half
    ("split", "Brief Notes on Transformers"); the table, its two layouts and the shift
    r_{n+1} = M r_n are nn/sinusoid.py's
  * learned: r_n = W_p[n], row n of a trained matrix (max_len, d_model)
  * none: r_n = 0 (the model is then permutation-equivariant unless it is causal).

Rotary (RoPE, Su et al. 2021) instead rotates each query and key: pairs of coordinates
(x_j, x_{j+D/2}) of the head vector are rotated by the angle n·θ_j, θ_j = base^{-2j/D}, so that
q_nᵀ k_m depends only on n - m. It is applied inside attention (``apply_rotary``).

Positions count from 0. ``positions`` may be (T,) shared by the batch or (B, T) per example
(e.g. left-padded prompts).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .arguments import positive_int, positive_number
from .sinusoid import POSITIONAL_LAYOUTS, SINUSOID_FORMULAS, shift_matrix, sinusoid_table

__all__ = [
    "POSITIONAL_KINDS",
    "POSITIONAL_LAYOUTS",
    "LearnedPositionalEncoding",
    "NoPositionalEncoding",
    "PositionalEncoding",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "apply_rotary",
    "make_positional_encoding",
    "shift_matrix",
    "sinusoid_table",
]

POSITIONAL_KINDS = ("sinusoidal", "learned", "rotary", "none")
"""The encodings `make_positional_encoding` builds (ModelConfig.positional)."""


class PositionalEncoding(nn.Module):
    """Common interface: ``vectors(positions)`` gives the r_n to add (None for rotary and
    none), ``forward(x, positions)`` adds them; ``rotary(positions)`` gives the (cos, sin)
    tables to rotate q and k (None unless RoPE)."""

    max_len: int

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        r = self.vectors(self._resolve(x, positions))
        return x if r is None else x + r.to(x.dtype)

    def vectors(self, positions: Tensor) -> Tensor | None:
        """r_n for positions (T,) or (B, T): (T, C) or (B, T, C); None if nothing is added."""
        return None

    def rotary(self, positions: Tensor, length: int | None = None) -> tuple[Tensor, Tensor] | None:
        return None

    def positions(self, t: int, offset: int = 0, device=None) -> Tensor:
        """(T,) positions offset..offset+T-1, checked against max_len."""
        if offset + t > self.max_len:
            raise ValueError(
                f"sequence of {offset + t} positions exceeds max_len={self.max_len}; "
                "shorten the input or build the model with a larger max_len"
            )
        return torch.arange(offset, offset + t, device=device)

    def _resolve(self, x: Tensor, positions: Tensor | None) -> Tensor:
        """Default positions 0..T-1 for x (B, T, C); given ones are checked."""
        if positions is None:
            return self.positions(x.shape[1], device=x.device)
        return self._check(positions)

    def _check(self, positions: Tensor) -> Tensor:
        # Reading the largest position is free on the CPU; on an accelerator it would force a
        # device sync, and under torch.compile a graph break, so it is skipped there (the
        # models check the sequence length against max_len in Python before).
        if positions.device.type != "cpu" or torch.compiler.is_compiling():
            return positions
        if positions.numel() and int(positions.max()) >= self.max_len:
            raise ValueError(
                f"position {int(positions.max())} is out of range for max_len={self.max_len}"
            )
        return positions


class NoPositionalEncoding(PositionalEncoding):
    """r_n = 0."""

    def __init__(self, max_len: int) -> None:
        super().__init__()
        self.max_len = positive_int("NoPositionalEncoding", "max_len", max_len)


class SinusoidalPositionalEncoding(PositionalEncoding):
    """x̃_n = x_n + r_n, r_n the sinusoid of ``sinusoid_table`` in ``layout``: "interleaved"
    (sin(n / base^{i/C}) at even i, cos(n / base^{(i-1)/C}) at odd i) or "split" (the notes' sin
    half, then cos half).

    Args:
        d_model: the width C of the vectors r_n.
        max_len: the number of positions tabulated (0..max_len-1), the notes' ℓ_max.
        base: the base of the wavelengths, 10000 in Vaswani et al.
        layout: "interleaved" or "split".

    Raises:
        ValueError: a size that is not a positive int, a base that is not positive, an
            unknown layout.
    """

    def __init__(
        self, d_model: int, max_len: int, base: float = 10000.0, layout: str = "interleaved"
    ) -> None:
        super().__init__()
        who = "SinusoidalPositionalEncoding"
        d_model, max_len = (
            positive_int(who, "d_model", d_model),
            positive_int(who, "max_len", max_len),
        )
        base = positive_number(who, "base", base)
        self.d_model, self.max_len, self.base, self.layout = d_model, max_len, base, layout
        table = sinusoid_table(max_len, d_model, base, layout).float()  # (max_len, C)
        self.register_buffer("table", table, persistent=False)

    @property
    def formula(self) -> str:
        """The formula of r_n in this layout, for titles and traces."""
        return SINUSOID_FORMULAS[self.layout]

    def vectors(self, positions: Tensor) -> Tensor:
        return self.table[self._check(positions)]  # (T, C) or (B, T, C)

    def shift_matrix(self, steps: int = 1) -> Tensor:
        """M^steps (float64, (C, C)) with r_{n+steps} = M^steps r_n; see ``shift_matrix``."""
        return shift_matrix(self.d_model, layout=self.layout, base=self.base, steps=steps)


class LearnedPositionalEncoding(PositionalEncoding):
    """x̃_n = x_n + W_p[n], W_p a trained (max_len, d_model) matrix, one row per position.

    Args:
        d_model: the width C of the vectors.
        max_len: the number of positions, the notes' ℓ_max: the rows of ``weight``.

    Raises:
        ValueError: a size that is not a positive int.
    """

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        who = "LearnedPositionalEncoding"
        d_model, max_len = (
            positive_int(who, "d_model", d_model),
            positive_int(who, "max_len", max_len),
        )
        self.max_len = max_len
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def vectors(self, positions: Tensor) -> Tensor:
        return self.weight[self._check(positions)]  # (T, C) or (B, T, C): W_p[n]


class RotaryEmbedding(PositionalEncoding):
    """RoPE: rotate (x_j, x_{j+D/2}) of each query/key head vector by n·θ_j, θ_j = base^{-2j/D}.

    The angles of positions 0..max_len-1 are a table; a model that may run past max_len (a
    decoder whose every layer attends a bounded window, glassformer.models.DecoderLM) passes
    ``length`` > max_len and gets the angles of every position computed by the same formula,
    equal to the table's below max_len.

    Args:
        head_dim: the head size D of the rotated vectors; even.
        max_len: the number of positions tabulated.
        base: the base in θ_j = base^{-2j/D}.

    Raises:
        ValueError: a size that is not a positive int, an odd ``head_dim``, a base that is
            not positive.
    """

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        who = "RotaryEmbedding"
        head_dim, max_len = (
            positive_int(who, "head_dim", head_dim),
            positive_int(who, "max_len", max_len),
        )
        base = positive_number(who, "base", base)
        if head_dim % 2:
            raise ValueError(f"rotary positional encoding needs an even head size, got {head_dim}")
        self.max_len, self.base, self.head_dim = max_len, base, head_dim
        cos, sin = self._angles(torch.arange(max_len))  # (max_len, D) each
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def rotary(self, positions: Tensor, length: int | None = None) -> tuple[Tensor, Tensor]:
        """(cos, sin) of shape (T, D), or (B, 1, T, D) for per-example positions (B, T).
        ``length``: the number of positions of the sequence (every position < length), when
        the caller allows more than max_len."""
        if length is not None and length > self.max_len:
            cos, sin = self._angles(positions)
            cos, sin = cos.to(self.cos.dtype), sin.to(self.sin.dtype)
        else:
            positions = self._check(positions)
            cos, sin = self.cos[positions], self.sin[positions]
        if positions.dim() == 2:
            cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D): broadcast over heads
        return cos, sin

    def _angles(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of n·θ_j for positions n (…,), float32 (…, D), computed in float64
        (float32 on a device without it)."""
        dtype = torch.float32 if positions.device.type == "mps" else torch.float64
        d = self.head_dim
        j = torch.arange(0, d, 2, dtype=dtype, device=positions.device)
        theta = self.base ** (-j / d)  # (D/2,)
        angle = positions.to(dtype)[..., None] * theta  # (…, D/2)
        angle = torch.cat([angle, angle], dim=-1)  # (…, D): same angle for j and j + D/2
        return angle.cos().float(), angle.sin().float()


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate x (B, H, T, D) by the position angles: x·cos + rotate_half(x)·sin."""
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, T, D/2) each
    rotated = torch.cat([-x2, x1], dim=-1)  # (B, H, T, D)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


def make_positional_encoding(
    kind: str,
    d_model: int,
    max_len: int,
    *,
    n_head: int = 1,
    base: float = 10000.0,
    layout: str = "interleaved",
) -> PositionalEncoding:
    """Build the encoding named ``kind``.

    Args:
        kind: "sinusoidal", "learned", "rotary" or "none" (POSITIONAL_KINDS).
        d_model: the model width; a rotary encoding rotates heads of d_model / n_head.
        max_len: the number of positions.
        n_head: the number of heads (rotary only); it must divide d_model.
        base: the sinusoid's and the rotary angles' base L.
        layout: where the sinusoid's features go (POSITIONAL_LAYOUTS); only "interleaved"
            for the other kinds.

    Returns:
        The encoding, a `PositionalEncoding`.

    Raises:
        ValueError: an unknown kind, a layout given to a kind other than sinusoidal, sizes
            that are not positive ints or do not divide.
    """
    max_len = positive_int("make_positional_encoding", "max_len", max_len)
    if kind != "sinusoidal" and layout != "interleaved":
        raise ValueError(
            f"layout={layout!r} lays out the sinusoidal encoding: it needs kind='sinusoidal', "
            f"got kind={kind!r}"
        )
    if kind == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len, base, layout)
    if kind == "learned":
        return LearnedPositionalEncoding(d_model, max_len)
    if kind == "rotary":
        n_head = positive_int("make_positional_encoding", "n_head", n_head)
        if positive_int("make_positional_encoding", "d_model", d_model) % n_head:
            raise ValueError(
                f"make_positional_encoding: d_model={d_model} must be divisible by "
                f"n_head={n_head} (rotary angles are per head, head size d_model / n_head)"
            )
        return RotaryEmbedding(d_model // n_head, max_len, base)
    if kind == "none":
        return NoPositionalEncoding(max_len)
    raise ValueError(f"positional encoding {kind!r} is not known; choose one of {POSITIONAL_KINDS}")
