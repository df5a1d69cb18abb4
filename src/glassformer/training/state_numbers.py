"""The numbers and JSON kinds of a training state (trainer.json), checked before anything is
restored: each number finite and within its range, each value of the kind it must keep
(state_check.py calls these)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["BETA_RANGE", "GROUP_RANGES", "RATE_RANGE", "check_number", "kind", "kind_words"]

# the numbers of a parameter group: (lowest, lowest allowed?, highest, highest allowed?)
GROUP_RANGES = {
    "lr": (0.0, True, math.inf, False),
    "initial_lr": (0.0, True, math.inf, False),
    "weight_decay": (0.0, True, math.inf, False),
    "eps": (0.0, False, math.inf, False),
    "momentum": (0.0, True, 1.0, False),
    "alpha": (0.0, True, 1.0, False),
    "dampening": (0.0, True, 1.0, True),
}
BETA_RANGE = (0.0, True, 1.0, False)
RATE_RANGE = (0.0, True, math.inf, False)


def check_number(path: Path, where: str, value: Any, allowed: tuple) -> None:
    """``ValueError`` naming the file, the field and its value unless ``value`` is a finite
    number within ``allowed`` (lowest, lowest allowed?, highest, highest allowed?)."""
    low, low_in, high, high_in = allowed
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if (
        number
        and math.isfinite(value)
        and (value > low or (low_in and value == low))
        and (value < high or (high_in and value == high))
    ):
        return
    raise ValueError(f"{path}: {where} is {value!r}; allowed {_range(allowed)}")


def _range(allowed: tuple) -> str:
    """``a finite number >= 0``, ``a number in [0, 1)``."""
    low, low_in, high, high_in = allowed
    if math.isinf(high):
        if math.isinf(low):
            return "a finite number"
        return f"a finite number {'>=' if low_in else '>'} {low:g}"
    return f"a number in {'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"


def kind(value: Any) -> str:
    """The JSON kind a value must keep: bool, number, list (of length n), null, str, dict."""
    if isinstance(value, bool) or value is None:
        return repr(value) if value is None else "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return f"list[{len(value)}]"
    return type(value).__name__


def kind_words(value: Any) -> str:
    """The kind of ``value`` as a message says it: ``a number``, ``a list of 2 items``."""
    k = kind(value)
    if k.startswith("list["):
        return f"a list of {k[5:-1]} items"
    words = {"number": "a number", "bool": "true or false", "None": "null", "str": "a string"}
    return words.get(k, f"a JSON {k}")
