"""The allowed values of settings, as data: a config class lists its choices and numeric
ranges in ``CHOICES`` and ``RANGES``, its checks use them, and ``glassformer config`` prints
them, so what the listing says is what the checks accept."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Range", "check_choice", "check_fields", "check_int", "check_number"]


@dataclass(frozen=True)
class Range:
    """``low <= value <= high`` (``<`` at an open end); None: no limit on that side."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        if self.high is not None:
            return value < self.high if self.open_high else value <= self.high
        return True

    def __str__(self) -> str:
        """``>= 1``, ``> 0``, ``in [0, 1)``, ``in [1, 1024]``."""
        if self.high is None:
            return f"{'>' if self.open_low else '>='} {_number(self.low)}"
        if self.low is None:
            return f"{'<' if self.open_high else '<='} {_number(self.high)}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"in {left}{_number(self.low)}, {_number(self.high)}{right}"


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not known; choose one of {allowed}")


def check_int(name: str, value: Any, allowed: Range) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r} must be an int {allowed}")
    _check_range(name, value, allowed, "an int")


def check_number(name: str, value: Any, allowed: Range) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (number and math.isfinite(value)):
        raise ValueError(f"{name}={value!r} must be a finite number {allowed}")
    _check_range(name, value, allowed, "a finite number")


def _check_range(name: str, value: float, allowed: Range, what: str) -> None:
    if value in allowed:
        return
    lower = Range(allowed.low, None, allowed.open_low)
    if value in lower:  # above the upper limit
        raise ValueError(f"{name}={value!r} is over the limit: allowed {what} {allowed}")
    raise ValueError(f"{name}={value!r} must be {what} {lower}")


def _number(x: float | None) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def check_fields(config: Any) -> None:
    """Check a dataclass instance against its class's ``CHOICES`` and ``RANGES`` (field name
    -> allowed values); None passes where the field's type allows it."""
    choices = getattr(type(config), "CHOICES", {})
    ranges = getattr(type(config), "RANGES", {})
    for f in dataclasses.fields(config):
        value, kind = getattr(config, f.name), str(f.type)
        if value is None and "None" in kind:
            continue
        if f.name in choices:
            check_choice(f.name, value, choices[f.name])
        if f.name in ranges:
            check = check_int if kind.startswith("int") else check_number
            check(f.name, value, ranges[f.name])
