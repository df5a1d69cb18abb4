"""The error a run raises for a setting, a folder or data it cannot use.

``RunError`` is a ``ValueError``: its message names what is wrong and what is allowed, and the
command line prints it as its one-line error (exit status 2).
"""

from __future__ import annotations

__all__ = ["RunError", "RunInterrupted"]


class RunError(ValueError):
    """A run cannot be planned, resumed or started as asked; the message says why."""


class RunInterrupted(Exception):
    """Training stopped on Ctrl-C or SIGTERM after saving a checkpoint; ``signal`` is the
    signal's number, and the message says how to continue."""

    def __init__(self, message: str, signal: int) -> None:
        super().__init__(message)
        self.signal = signal
