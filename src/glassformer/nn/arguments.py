"""Checks of the components' constructor arguments: a ValueError naming the component, the
argument, the value given and what is allowed, before any tensor is made from it."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Protocol

from torch import Tensor

__all__ = ["TokenPacking", "fraction", "positive_int", "positive_number"]


def positive_int(who: str, name: str, value: object) -> int:
    """``value`` as an int >= 1 (a size, a count of heads or of positions)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{who}: {name}={value!r} is not allowed: a positive int")
    return int(value)


def fraction(who: str, name: str, value: object, *, closed: bool = False) -> float:
    """``value`` as a float in [0, 1) (a dropout probability), or [0, 1] when ``closed``."""
    ok = isinstance(value, Real) and not isinstance(value, bool)
    if not ok or not (0.0 <= value < 1.0 or (closed and value == 1.0)):
        allowed = "[0, 1]" if closed else "[0, 1)"
        raise ValueError(f"{who}: {name}={value!r} is not allowed: a number in {allowed}")
    return float(value)


def positive_number(who: str, name: str, value: object) -> float:
    """``value`` as a finite float > 0 (an epsilon, a base of the positional angles)."""
    ok = isinstance(value, Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{who}: {name}={value!r} is not allowed: a finite number > 0")
    return float(value)


class TokenPacking(Protocol):
    """Where the N real tokens of a padded (B, T) batch sit, for a caller that runs the
    blocks on them alone (glassformer.fast.packing.Packing is one)."""

    def pack(self, x: Tensor) -> Tensor:
        """(B, T, ...) -> (N, ...): the real tokens, in order."""

    def unpack(self, u: Tensor) -> Tensor:
        """(N, ...) -> (B, T, ...), zeros at the padding."""
