"""What the examples' command lines share with ``glassformer``'s (cli/errors.py): every
argument checked before anything is trained, each mistake one line ``glassformer: error: ...``
with exit status 2, Ctrl-C one line with exit status 130, never a traceback.

    command          run an example's ``body(argv)`` under those rules; its exit status
    picture_folder   ``--pictures DIR``: a folder that can be made or written, and matplotlib
    picture_file     ``--picture PNG``: a file that can be created or replaced, and matplotlib
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..cli.errors import ArgumentParser, UsageError, guarded
from ..inspect._draw import require_matplotlib
from ..runs import output_dir, output_file

__all__ = ["ArgumentParser", "command", "picture_file", "picture_folder"]


def command(body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """``body(argv)``'s exit status; a user's mistake or Ctrl-C is one line on stderr."""
    return guarded(lambda: body(argv))


def picture_folder(path: Path, option: str) -> None:
    """``UsageError`` unless the pictures can be drawn into the folder ``path``."""
    _drawable(option)
    output_dir(path, option)


def picture_file(path: Path, option: str) -> None:
    """``UsageError`` unless a picture can be drawn into the file ``path``."""
    _drawable(option)
    output_file(path, option)


def _drawable(option: str) -> None:
    try:
        require_matplotlib()
    except ImportError as err:
        raise UsageError(f"{option}: {err}") from None
