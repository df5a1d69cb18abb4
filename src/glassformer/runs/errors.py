"""The error a run raises for a setting, a folder or data it cannot use.

``RunError`` is a ``ValueError``: its message names what is wrong and what is allowed, and the
command line prints it as its one-line error (exit status 2). ``argument`` is the Python
argument the message opens with (``init_from``), ``names`` the settings and arguments it
names (``train.lr``): the command line says the flags that give them (glassformer/named.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..named import naming

__all__ = ["RunError", "RunInterrupted", "RunNote"]


class RunError(ValueError):
    """A run cannot be planned, resumed or started as asked; the message says why."""

    def __init__(
        self, message: str, *, argument: str | None = None, names: Iterable[str] = ()
    ) -> None:
        super().__init__(message)
        naming(self, argument=argument, names=names)


class RunNote(UserWarning):
    """A note on a run that goes on (a warmup longer than the run, data changed and accepted):
    a warning whose ``names`` are those of ``RunError`` (the command line prints it as a note
    line with the flags)."""


class RunInterrupted(Exception):
    """Training stopped on Ctrl-C or SIGTERM after saving a checkpoint; ``signal`` is the
    signal's number, and the message says how to continue."""

    def __init__(self, message: str, signal: int) -> None:
        super().__init__(message)
        self.signal = signal
