"""Run folders and their checkpoints: run.json written and read, a checkpoint found and loaded.

    <run>/run.json          the plan and the model config: everything to rebuild the run
    <run>/metrics.jsonl     one JSON object per logged step (written by the trainer)
    <run>/checkpoints/step-NNNNNN/   loadable models (config.json, model.safetensors,
                                     tokenizer.json) + trainer state (trainer.json, ...)
    <run>/loss.png, <run>/tensorboard/, <run>/eval.json   written after the run
    <run>/.lock             the pid and host of the process training (training/lock.py)

Every file is written with the mode the umask gives and never through a symbolic link (see
glassformer/safe_write.py); ``train`` refuses a run folder in which one of these names is a link.
The run folder itself may be a link (e.g. to a bigger disk).

A run folder's model is found and loaded by folder.py (``glassformer.load_model``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..models.config import ModelConfig
from ..safe_write import write_text
from ..structured import loads_json
from ..training.layout import CHECKPOINTS, checkpoints
from ..training.lock import LOCK_FILE
from .errors import RunError
from .folder import RUN_FILE
from .plan import RunPlan

__all__ = [
    "RUN_FILE",
    "check_no_links",
    "holds_run",
    "read_run",
    "write_json",
    "write_run",
]

FORMAT, VERSION = "glassformer-run", 1
# what a run writes into its folder
WRITTEN = (
    RUN_FILE,
    "metrics.jsonl",
    CHECKPOINTS,
    "loss.png",
    "tensorboard",
    "eval.json",
    LOCK_FILE,
)


def holds_run(path: Path) -> bool:
    """Does ``path`` hold a training run worth keeping: one with a complete checkpoint? A run
    that stopped before its first checkpoint (out of memory at step 1, killed early) left
    nothing to resume, so a new run may start over in its folder."""
    return bool(checkpoints(path))


def check_no_links(run_dir: Path) -> None:
    """``RunError`` when a name the run writes in ``run_dir`` is a symbolic link: nothing is
    written through a link that may lead out of the run folder."""
    for name in WRITTEN:
        path = run_dir / name
        if path.is_symlink():
            raise RunError(
                f"{path} is a symbolic link (to {os.readlink(path)}); a run writes nothing "
                "through a link in its folder: remove the link (to keep a run on another disk, "
                "link the run folder itself)"
            )


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON through a temporary file and a rename (a link at
    ``path`` is replaced, not followed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(data, indent=2) + "\n")


def write_run(plan: RunPlan, model: ModelConfig) -> Path:
    """Write <out>/run.json for ``plan`` and the final model config."""
    data = {"format": FORMAT, "version": VERSION, **plan.to_dict(), "model": model.to_dict()}
    path = plan.out / RUN_FILE
    write_json(path, data)
    return path


def read_run(run_dir: Path) -> tuple[RunPlan, ModelConfig]:
    """The plan and model config recorded in <run_dir>/run.json."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise RunError(
            f"nothing to resume in {run_dir}: it has no {RUN_FILE} "
            "(start a new run there: Run.plan, not Run.resume)",
            names=["Run.resume"],
        )
    try:
        data = loads_json(path.read_bytes(), str(path))
        if data.get("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT!r}")
        model = ModelConfig.from_dict(data.pop("model"))
        for key in ("format", "version"):
            data.pop(key)
        return RunPlan.from_dict(data), model
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise RunError(f"{path} is not a readable run file ({err})") from None


def checkpoint_step(path: Path) -> int:
    return int(path.name.rsplit("-", 1)[-1])
