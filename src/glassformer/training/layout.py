"""The checkpoints the trainer writes in its output folder, and which of them to load.

    <out>/checkpoints/step-000500/   one complete checkpoint per saved step (state.py)

This module is the one place that names the checkpoints folder (``CHECKPOINTS``); the trainer
writes it (and prunes it to ``keep_last``), and ``glassformer.runs`` finds a run folder's
checkpoint with it (runs/folder.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..structured import loads_json

__all__ = [
    "CHECKPOINTS",
    "best_or_latest",
    "checkpoints",
    "latest_checkpoint",
    "prune",
    "remove_partial_checkpoints",
]

CHECKPOINTS, PREFIX = "checkpoints", "step-"


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX))


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, None before the first."""
    found = checkpoints(run_dir)
    return found[-1] if found else None


def best_or_latest(run_dir: Path) -> Path | None:
    """The best checkpoint of a run (trainer.json's record), else its newest one."""
    found = checkpoints(run_dir)
    if not found:
        return None
    try:
        best = loads_json((found[-1] / "trainer.json").read_bytes(), "trainer.json").get("best")
    except (OSError, ValueError):
        best = None
    if isinstance(best, dict) and isinstance(best.get("step"), int):
        candidate = Path(run_dir) / CHECKPOINTS / f"{PREFIX}{best['step']:06d}"
        if candidate.is_dir():
            return candidate
    return found[-1]


def prune(run_dir: Path, keep_last: int, keep: set[int]) -> None:
    """Delete all but the newest ``keep_last`` checkpoints and the steps in ``keep``."""
    found = checkpoints(run_dir)
    for path in found[: max(len(found) - keep_last, 0)]:
        if int(path.name[len(PREFIX) :]) not in keep:
            shutil.rmtree(path, ignore_errors=True)  # a link is left, never followed


def remove_partial_checkpoints(run_dir: Path) -> list[Path]:
    """Delete the hidden temporary folders (``.step-*``) of checkpoint writes that a kill
    interrupted; they are never loaded. Call only while holding the run's lock."""
    root = Path(run_dir) / CHECKPOINTS
    found = sorted(root.glob(f".{PREFIX}*")) if root.is_dir() else []
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return found
