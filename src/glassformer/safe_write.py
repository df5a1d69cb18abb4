"""Writing files without following symbolic links, with the modes of the user's umask.

A whole file is written to a new temporary file beside it and renamed into place: a reader
sees the old file or the new one, never half of one, and a symbolic link at the path is
replaced by the file (its target is left as it was). An append refuses a path that is a link.
Temporary files and folders are created new (``O_EXCL``), never through an existing name. Files
and folders get the modes ``open`` and ``mkdir`` give: 0o666 and 0o777 less the umask (0o644
and 0o755 under the usual umask 022; 0o600 and 0o700 under 077), also when the writer (e.g.
safetensors, which makes its files 0o600) chose another.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "append_text",
    "file_mode",
    "remove",
    "replace_dir",
    "replace_file",
    "temp_dir",
    "temp_file",
    "write_text",
]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # 0 where the system lacks it (Windows)
TRIES = 100


def file_mode() -> int:
    """0o666 less the process's umask: the mode ``open`` gives a new file."""
    return 0o666 & ~_umask()


def _umask() -> int:
    try:  # Linux shows it without changing it
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # elsewhere: read it by setting it, and restore it at once
    os.umask(mask)
    return mask


def temp_file(directory: str | os.PathLike[str], prefix: str, text: str = "") -> Path:
    """A new file ``<directory>/<prefix><random>.tmp`` (mode 0o666 less the umask) holding
    ``text`` (UTF-8), written through the descriptor that created it."""
    for _ in range(TRIES):
        path = Path(directory) / f"{prefix}{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return path
    raise FileExistsError(f"no free temporary name {prefix}*.tmp in {directory}")


def temp_dir(directory: str | os.PathLike[str], prefix: str) -> Path:
    """A new empty folder ``<directory>/<prefix><random>`` (mode 0o777 less the umask)."""
    for _ in range(TRIES):
        path = Path(directory) / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free temporary name {prefix}* in {directory}")


def replace_file(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a new temporary file beside ``path``, then give it the
    umask's mode and rename it to ``path`` (replacing a file or a link there)."""
    path = Path(path)
    tmp = temp_file(path.parent, f".{path.name}.")
    try:
        write(tmp)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def replace_dir(path: str | os.PathLike[str], fill: Callable[[Path], object]) -> Path:
    """Call ``fill(tmp)`` to fill a new temporary folder beside ``path``, then rename it to
    ``path``, replacing a folder or a link there."""
    path = Path(path)
    tmp = temp_dir(path.parent, f".{path.name}.")
    try:
        fill(tmp)
        if path.exists() or path.is_symlink():
            remove(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) as the whole of ``path``, through ``replace_file``."""
    return replace_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, created if missing; ``ValueError`` when ``path``
    is a symbolic link, which is not followed."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW
    try:
        fd = os.open(path, flags, 0o666)
    except OSError:
        if Path(path).is_symlink():
            raise ValueError(
                f"{path} is a symbolic link; it is not written through (remove the link)"
            ) from None
        raise
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)


def remove(path: str | os.PathLike[str]) -> None:
    """Delete ``path``: a link or a file itself, a folder with its contents (a link is
    removed, never followed)."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)
