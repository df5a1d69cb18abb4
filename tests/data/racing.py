"""Two processes started together on the same cache: which one waits, and what each says."""

from __future__ import annotations

import selectors
import subprocess
from pathlib import Path


def race(args: list[str], sync: Path) -> tuple[str, str, dict[str, str], list[int]]:
    """Run ``args + [name]`` for the names "a" and "b" at once. The one that encodes holds its
    first piece until the file ``sync/go`` exists: before that, the only line either can show
    is the other's, that it waits. Returns (the waiter's name, its first stderr line, each
    process's remaining stderr, their exit codes)."""
    procs = {
        name: subprocess.Popen([*args, name], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    }
    try:
        with selectors.DefaultSelector() as selector:
            for name, proc in procs.items():
                selector.register(proc.stderr, selectors.EVENT_READ, name)
            [(key, _)] = selector.select(timeout=120)[:1]
        waiter = key.data
        waiting = procs[waiter].stderr.readline()
        (sync / "go").touch()
        err = {name: proc.communicate(timeout=120)[1] for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.kill()
    return waiter, waiting, err, [proc.returncode for proc in procs.values()]
