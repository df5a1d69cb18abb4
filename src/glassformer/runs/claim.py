"""A run claiming its folder: checked before any data is loaded, locked
before anything is written into it.

    check_out          the folder can be a run folder: a directory (or none yet) this user may
                       write, with no symbolic link where the run writes (see record.WRITTEN),
                       on a UTF-8 path (safetensors opens no other, so its checkpoints could
                       not be read back)
    refuse_kept_run    a new run does not start over a run that has a checkpoint
    take_lock          the run's lock (training/lock.py), then the check above once more, as
                       another run may have finished into the folder meanwhile
"""

from __future__ import annotations

import os
from pathlib import Path

from ..training.lock import RunLock
from .errors import RunError
from .plan import RunPlan
from .record import RUN_FILE, check_no_links, holds_run, read_run
from .resume import comparable

__all__ = [
    "check_out",
    "differences",
    "output_dir",
    "output_file",
    "refuse_kept_run",
    "take_lock",
]


def check_out(out: Path) -> None:
    """``RunError`` unless ``out`` can be a run folder (see the module docstring)."""
    output_dir(out, "out")
    try:
        str(out.absolute()).encode("utf-8")
    except UnicodeEncodeError:
        raise RunError(
            f"out {out}: the path is not UTF-8, and safetensors, which holds the checkpoints, "
            "opens UTF-8 paths only; allowed: a folder whose path is UTF-8",
            argument="out",
        ) from None
    check_no_links(out)


def differences(plan: RunPlan) -> list[str] | None:
    """The settings in which the run kept in ``plan.out`` differs from ``plan``, as
    "key A there, B here" texts; None when its run.json cannot be read."""
    try:
        stored, _ = read_run(plan.out)
    except RunError:
        return None
    before, now = comparable(stored), comparable(plan)
    keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    return [f"{k} {_shown(before.get(k))} there, {_shown(now.get(k))} here" for k in keys]


def _shown(value) -> str:
    return "not set" if value is None else repr(value)


def refuse_kept_run(plan: RunPlan) -> None:
    """``RunError`` when ``plan.out`` holds a run (see holds_run), saying whether that run
    has the same settings and how to continue it."""
    if not holds_run(plan.out):
        return
    differ = differences(plan)
    if differ == []:
        raise RunError(
            f"{plan.out} already holds a run with these settings; continue it with Run.resume "
            "(a larger train.steps extends it), or choose another run.out",
            names=["Run.resume", "train.steps", "run.out"],
        )
    why = f"its {RUN_FILE} is unreadable" if differ is None else differ[0]
    raise RunError(
        f"{plan.out} already holds a run with other settings ({why}); continue that run with "
        f"run.out={plan.out} and Run.resume, or choose another run.out for this one",
        names=["run.out", "Run.resume"],
    )


def take_lock(lock: RunLock, plan: RunPlan, new: bool) -> None:
    """Create the folder and take ``lock`` (``ValueError`` naming the holder when another run
    has it); a ``new`` run then refuses a run kept there, releasing the lock."""
    plan.out.mkdir(parents=True, exist_ok=True)
    lock.acquire()
    if new:
        try:
            refuse_kept_run(plan)
        except RunError:
            lock.release()
            raise


def output_dir(path: Path, option: str) -> None:
    """``RunError`` unless ``path`` is a directory, or can be made one, that this user may
    write into; checked before a command loads or computes anything. ``option``: the argument
    the message names ("out")."""
    if os.path.lexists(path) and not path.is_dir():  # a file, or a link to nothing
        raise RunError(
            f"{option} {path}: exists and is not a directory; allowed: a new or existing directory",
            argument=option,
        )
    _writable_parent(path, option)


def output_file(path: Path, option: str) -> None:
    """``RunError`` unless ``path`` names a file this user may create or replace."""
    if path.is_dir():
        raise RunError(
            f"{option} {path}: is a directory; allowed: a file name (a new file, or one to "
            "replace)",
            argument=option,
        )
    _writable_parent(path.parent, option, path)


def _writable_parent(path: Path, option: str, named: Path | None = None) -> None:
    """The nearest existing folder at or above ``path`` must be a writable directory."""
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    shown = named or path
    if not existing.is_dir():
        raise RunError(f"{option} {shown}: {existing} is a file, not a directory", argument=option)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunError(
            f"{option} {shown}: the directory {existing} is not writable", argument=option
        )
