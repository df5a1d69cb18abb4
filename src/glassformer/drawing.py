"""Drawings a lower floor offers but a higher one makes: ``ActivationCache.show`` (models)
draws with the explorer's views (explore, floors above it). The package's ``__init__``, which
stands above both, registers the drawer; the drawer imports the explorer when first called,
so ``cache.show(...)`` works after any import of glassformer and ``import glassformer`` loads
nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DRAWERS: dict[str, Callable[..., Any]] = {}


def register(kind: str, drawer: Callable[..., Any]) -> None:
    """``drawer`` makes the drawings of ``kind`` (e.g. "cache": ActivationCache.show)."""
    _DRAWERS[kind] = drawer


def draw(kind: str, *args: Any, **options: Any) -> Any:
    """The drawing of ``kind`` from ``args`` and ``options``, by its registered drawer."""
    if kind not in _DRAWERS:
        raise RuntimeError(f"no drawer for {kind!r}: registered are {sorted(_DRAWERS)}")
    return _DRAWERS[kind](*args, **options)
