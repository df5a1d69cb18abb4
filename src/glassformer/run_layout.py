"""The layout of a run folder written by ``glassformer train``, and which checkpoint to load.

    <run>/checkpoints/step-000500/   one complete checkpoint per saved step (training/state.py)

This module is the one place that names the checkpoints folder (``CHECKPOINTS``) and the run
file (``RUN_FILE``). Nothing here imports torch or the models, so the model loader
(``load_pretrained`` accepts a run folder), the trainer and ``glassformer.runs`` can all use it.
"""

from __future__ import annotations

from pathlib import Path

from .structured import loads_json

CHECKPOINTS, PREFIX = "checkpoints", "step-"
RUN_FILE = "run.json"  # the run's plan and settings (runs/record.py)


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX))


def latest_checkpoint(run_dir: Path) -> Path | None:
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
