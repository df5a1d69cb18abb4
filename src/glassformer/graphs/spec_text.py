"""A graph written as its spec: the text (or object) that ``glassformer.graphs.parse`` reads back.

Every AttentionGraph carries a ``spec``, and two graphs are equal when their specs are. The
spec of a band is its shortest name (``band_spec``: "causal", "window:64", "dilated:8:2:causal",
else "band:before:after:dilation"); of a union or intersection its parts' specs joined by ``|``
or ``&``, a compound part in parentheses ("(window:4&causal)|global:0"), or an object
``{"union": [...]}`` when a part is given by its edges and so has an object as its spec.
spec.py parses what this module writes; nothing here builds a graph.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Protocol

__all__ = ["band_spec", "joined_spec", "spec_key"]


class Specified(Protocol):
    """What ``joined_spec`` reads of a graph: its spec."""

    spec: str | dict


def band_spec(before: float, after: float, dilation: int) -> str:
    """The shortest name of a band: "full", "causal", "self", "window:w", "dilated:w:d" (with
    ":causal" when nothing after), else "band:before:after:dilation"."""
    if (before, after, dilation) == (math.inf, math.inf, 1):
        return "full"
    if (before, after, dilation) == (math.inf, 0, 1):
        return "causal"
    tail = ":causal" if after == 0 and before > 0 else ""
    if before != math.inf and (after in (before, 0)) and before % dilation == 0:
        w = before // dilation + 1
        if (before, after) == (0, 0):
            return "self"
        return (f"window:{w}" if dilation == 1 else f"dilated:{w}:{dilation}") + tail
    return f"band:{_num(before)}:{_num(after)}:{dilation}"


def _num(v) -> str:
    return "inf" if v == math.inf else str(v)


def joined_spec(parts: Iterable[Specified], op: str) -> str | dict:
    """The spec of a union ("a|b") or intersection ("a&b"); an object when a part is given by
    its edges (``{"union": [...]}``), whose spec is an object too."""
    specs = [p.spec for p in parts]
    if all(isinstance(x, str) for x in specs):
        return op.join(f"({x})" if _compound(x) else x for x in specs)
    return {"union" if op == "|" else "intersection": specs}


def _compound(spec: str) -> bool:
    return any(ch in spec for ch in "|&")


def spec_key(spec: str | dict) -> str:
    """A spec as a string that equal graphs share (``==`` and ``hash`` of AttentionGraph)."""
    return spec if isinstance(spec, str) else repr(sorted(spec.items()))
