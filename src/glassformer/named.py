"""What a library error asks its reader to change, by the names a Python caller uses.

A message opens with the Python argument it is about (``init_from runs/x: not a model``) and
writes its advice with settings and arguments (``lower train.lr (e.g. train.lr=0.0005)``,
``continue it with Run.resume``): a value to set as ``key=value``, a value the run has as
``key = value`` (``train.warmup = 4 is longer than the run``). ``naming`` records both on
the exception (``argument``, ``names``), so that the command line can say the flags that give
them (cli/hints.py: ``--init-from runs/x``, ``--set train.lr=0.0005``, ``--resume``); the
library itself never names a flag. Plain Python, importable from every floor.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["naming"]

E = TypeVar("E", bound=BaseException)


def naming(err: E, *, argument: str | None = None, names: Iterable[str] = ()) -> E:
    """``err`` with ``argument`` (the Python argument its message opens with, e.g.
    "init_from") and ``names`` (the settings and arguments its message names or assigns,
    e.g. "train.lr", "Run.resume")."""
    err.argument = argument  # type: ignore[attr-defined]
    err.names = tuple(names)  # type: ignore[attr-defined]
    return err
