"""How training fails: ``TrainingError`` when the run cannot go on, ``DiskFullError`` when a
checkpoint finds no room on its disk."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DiskFullError", "TrainingError"]


class TrainingError(RuntimeError):
    """The run cannot go on (a loss or gradient that is not finite, a full disk)."""


class DiskFullError(TrainingError):
    """A checkpoint could not be written: no space (or quota) left where it goes. Nothing was
    lost: its temporary folder is removed and the checkpoints before it are intact.

    Attributes: ``folder`` the checkpoints folder, ``needed`` about how many bytes the
    checkpoint takes, ``free`` the bytes free there after the failed write."""

    def __init__(self, message: str, folder: Path, needed: int, free: int) -> None:
        super().__init__(message)
        self.folder, self.needed, self.free = folder, needed, free
