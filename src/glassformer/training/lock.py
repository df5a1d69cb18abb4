"""One writer per run directory: ``<run>/.lock`` holds the pid and host of the process
training into it.

The lock is created whole (written to a private file, then hard-linked into place, which
fails if a lock exists), so a reader never sees half of one. A lock left by a process that
no longer runs on this host (killed, or crashed before it could release) is stale: it is
replaced, with a ``StaleLockWarning``. A lock from another host cannot be checked and is
respected; delete it by hand when that run is gone.
"""

from __future__ import annotations

import json
import os
import socket
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..safe_write import temp_file
from ..structured import loads_json

__all__ = ["LOCK_FILE", "RunLock", "StaleLockWarning", "holding_run_dir"]

LOCK_FILE = ".lock"


class StaleLockWarning(UserWarning):
    """A lock left by a process that has gone was replaced."""


class RunLock:
    """``with RunLock(run_dir):`` or ``acquire()`` / ``release()``."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.held = False

    def acquire(self) -> None:
        """Take the lock; ``ValueError`` naming the folder and the holder's pid when another
        live process holds it."""
        if not self.run_dir.is_dir():
            raise ValueError(f"run directory {self.run_dir} does not exist")
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        # a new file, never through a link
        tmp = temp_file(self.run_dir, f"{LOCK_FILE}.", json.dumps(me) + "\n")
        try:
            for _ in range(3):  # a stale lock removed; a racing process may take it first
                try:
                    os.link(tmp, self.path)
                    self.held = True
                    return
                except FileExistsError:
                    self._clear_if_stale()
            raise ValueError(f"could not take the lock {self.path}; another run keeps taking it")
        finally:
            tmp.unlink(missing_ok=True)

    def check(self) -> None:
        """``ValueError`` as in ``acquire`` when another live process holds the lock; a stale
        lock is left for ``acquire`` to replace."""
        if self.path.exists():
            self._clear_if_stale(remove=False)

    def release(self) -> None:
        """Remove the lock if this process still holds it."""
        if self.held and _read(self.path).get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)
        self.held = False

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _clear_if_stale(self, remove: bool = True) -> None:
        holder = _read(self.path)
        if not holder:  # released meanwhile: try again
            return
        pid, host = holder.get("pid"), holder.get("host")
        if not isinstance(pid, int) or not isinstance(host, str):
            note = f"an unreadable lock {self.path} ({holder.get('error', holder)})"
        elif host != socket.gethostname():
            raise ValueError(
                f"{self.run_dir} is in use by process {pid} on host {host!r} (lock file "
                f"{self.path}); wait for that run to end, or delete the lock file if it is gone"
            )
        elif pid == os.getpid() or _alive(pid):
            raise ValueError(
                f"{self.run_dir} is in use by process {pid} on this host (lock file "
                f"{self.path}); wait for that run to end, or train into another folder"
            )
        else:
            note = f"a stale lock {self.path} left by process {pid}, which is no longer running"
        if remove:
            warnings.warn(f"replacing {note}", StaleLockWarning, stacklevel=4)
            self.path.unlink(missing_ok=True)


def _read(path: Path) -> dict:
    try:
        data = loads_json(path.read_bytes(), str(path))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        return {"error": str(err)}
    return data if isinstance(data, dict) else {"error": f"not a JSON object: {data!r}"[:80]}


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


@contextmanager
def holding_run_dir(
    run_dir: Path | None,
    lock: RunLock | None,
    resume: bool,
    together: Callable[[ValueError | None], None] = lambda e: None,
) -> Iterator[None]:
    """Inside: ``run_dir`` exists (made unless ``resume``) and this process holds its lock:
    ``lock``, taken already by the caller, or one taken here and released on exit. None: a
    process that writes no files (not the first under torchrun). ``together(error)`` raises
    the error in every process of a run at once (Cluster.raise_together)."""
    if lock is not None and not (lock.held and lock.run_dir == run_dir):
        raise ValueError(f"lock={lock.path} is not a held lock of run_dir={run_dir}")
    own, error = None, None
    if run_dir is not None and lock is None:
        own = RunLock(run_dir)
        try:
            if not resume:
                run_dir.mkdir(parents=True, exist_ok=True)
            elif not run_dir.is_dir():
                raise ValueError(f"nothing to resume: {run_dir} does not exist")
            own.acquire()
        except ValueError as err:
            error = err
    together(error)  # under torchrun: every process stops, none hangs
    try:
        yield
    finally:
        if own is not None:
            own.release()
