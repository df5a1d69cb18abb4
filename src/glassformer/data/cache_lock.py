"""One process at a time: an exclusive lock on a file of the token cache, so that of the
processes that want the same token file (the ranks of a torchrun, two runs started together)
one encodes it and the others wait, then read the finished file.

The lock is ``fcntl.flock`` on ``<key>.lock`` beside the token file. The system releases it
when its holder ends, killed or not, so a lock file left by a dead process never blocks. The
holder deletes the file before it lets go; a process that was waiting on the deleted file finds
that the path no longer names the file it locked and locks the path again. Where ``fcntl`` is
missing (Windows) or the file system refuses locks (some network file systems), nothing is
locked: two processes may then both encode, each writing its own temporary file and renaming it
into place (token_cache.py), as without a lock.

So a lock file stays only when its holder was killed. ``remove_stale`` deletes such a file
under the same rule: it takes the lock without waiting (it fails while a process holds it) and
deletes the file before it lets go, so a process waiting on that file locks the path again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not a POSIX system
    fcntl = None  # type: ignore[assignment]

__all__ = ["exclusive", "remove_stale"]

UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@contextlib.contextmanager
def exclusive(path: Path, waiting: Callable[[], object]) -> Iterator[None]:
    """Hold the lock of ``path`` (created when missing) for the ``with`` block; ``waiting()``
    is called once, before waiting, when another process holds it. An ``OSError`` when the
    lock file cannot be created (a folder that cannot be written)."""
    fd = _lock(path, waiting) if fcntl is not None else None
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                path.unlink()
            os.close(fd)  # releases the lock


def _lock(path: Path, waiting: Callable[[], object]) -> int | None:
    """A descriptor of the file at ``path``, locked; None when locks are not supported."""
    told = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:
                    waiting()
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:
            os.close(fd)
            if err.errno in UNSUPPORTED:
                return None
            raise
        except BaseException:
            os.close(fd)
            raise
        if _names(path, fd):
            return fd
        os.close(fd)  # the holder deleted the file that was locked: lock the path again


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the open file ``fd``."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


def remove_stale(path: Path, age: float) -> bool:
    """Delete the lock file ``path`` when no process holds its lock and it was made at least
    ``age`` seconds ago (a killed holder's); whether it was deleted. Nothing where locks are not
    supported (a file there may belong to a process that cannot lock it)."""
    if fcntl is None:
        return False
    try:
        if time.time() - path.lstat().st_mtime < age:
            return False
        fd = os.open(path, os.O_RDWR | NOFOLLOW)
    except OSError:
        return False  # gone already, or not ours to open
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _names(path, fd):
            return False  # deleted meanwhile by its holder; another file may be there now
        path.unlink()
        return True
    except OSError:
        return False  # held by a live process, or locks not supported
    finally:
        os.close(fd)  # releases the lock
