"""Held-out validation: which part of a file validates a run (``val_fraction``, e.g. 0.1).

* A whole text (an lm file): its last ``val_fraction`` of characters, as nanoGPT's data
  preparation does (windows are cut from one stream, so the held-out part is one piece).
* Records (lines of ``one_per_line`` text, pairs, labelled texts, the records of a JSON Lines or
  Parquet file, the files of a folder): record i (counting from 0) is held out when
  ``floor((i + 1) f) > floor(i f)``: one record in every 1/f, spread evenly through the file
  (for 0.1: records 10, 20, 30, ... counting from 1), so that a file sorted by label or by length
  still gives a validation set like the rest. The rule needs no count of the records first, so a
  reader decides as it streams.

Either way ``floor(n f)`` of n characters or records are held out; a file too short to hold out
one is refused (``held_out_count``).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING

from ..named import naming

if TYPE_CHECKING:
    from .examples import TextDataset

__all__ = ["check_fraction", "held_out_count", "is_held_out", "percent", "split_records"]


def check_fraction(val_fraction: float) -> Fraction:
    """``val_fraction`` as an exact fraction (0.1 -> 1/10, so counts are not off by rounding)."""
    ok = isinstance(val_fraction, int | float) and not isinstance(val_fraction, bool)
    if not ok or not 0 <= val_fraction < 1:
        raise ValueError(
            f"val_fraction is {val_fraction!r}: allowed a number in [0, 1), e.g. 0.1 (0: no "
            "part held out)"
        )
    return Fraction(repr(float(val_fraction)))


def percent(fraction: float | Fraction) -> str:
    """0.1 -> '10%', 0.125 -> '12.5%'."""
    return f"{float(fraction) * 100:g}%"


def is_held_out(index: int, fraction: Fraction) -> bool:
    """Whether record ``index`` (from 0) is held out for validation (the module docstring);
    in integers, f = p / q (Fraction arithmetic took most of a scan's time)."""
    p, q = fraction.numerator, fraction.denominator
    return (index + 1) * p // q > index * p // q


def held_out_count(n: int, fraction: Fraction, unit: str, path: str) -> int:
    """How many of ``n`` characters / records are held out; refuses a file too short."""
    k = math.floor(n * fraction)
    if k == 0:
        message = (
            f"file {path!r}: {n} {unit} are too few to hold out val_fraction="
            f"{float(fraction)} for validation (none would be held out): allowed a file of at "
            f"least {math.ceil(1 / fraction)} {unit}, or a separate validation file "
            "(val_data=FILE, or val_data=none to train on the whole file)"
        )
        raise naming(ValueError(message), names=["val_data"])
    return k


def split_records(dataset: TextDataset, fraction: Fraction, split: str) -> TextDataset:
    """The records of ``split``: those held out, spread evenly (splits.py), or the others."""
    n = len(dataset)
    held_out_count(n, fraction, "lines" if dataset.task == "lm" else "rows", dataset.name)
    keep = [i for i in range(n) if is_held_out(i, fraction) == (split == "validation")]
    description = dataset.description
    if split == "validation":
        description = f"{percent(fraction)} of the records of {description}, held out"
    return dataclasses.replace(
        dataset,
        split=split,
        examples=[dataset.examples[i] for i in keep],
        description=description,
        lines=[dataset.lines[i] for i in keep],
    )
