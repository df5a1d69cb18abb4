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

``--checkpoint DIR`` accepts a checkpoint folder (it has config.json) or a run folder (its best
checkpoint when the newest trainer.json records one, else its newest checkpoint).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..models import GlassformerModel, load_model
from ..models.config import ModelConfig
from ..run_layout import CHECKPOINTS, RUN_FILE, best_or_latest, checkpoints
from ..safe_write import write_text
from ..structured import loads_json
from ..training import resolve_device
from ..training.lock import LOCK_FILE
from .errors import RunError
from .plan import RunPlan

__all__ = [
    "RUN_FILE",
    "check_no_links",
    "holds_run",
    "load_checkpoint",
    "read_run",
    "resolve_checkpoint",
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
            "(start a new run there without --resume)"
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


def resolve_checkpoint(path: Path) -> Path:
    """A checkpoint folder from a checkpoint or run folder (see the module docstring)."""
    if not path.exists():
        raise RunError(f"--checkpoint {path}: no such directory")
    if (path / "config.json").is_file():
        return path
    if (path / CHECKPOINTS).is_dir() or (path / RUN_FILE).is_file():
        found = best_or_latest(path)
        if found is None:
            raise RunError(f"--checkpoint {path}: the run has no checkpoint yet")
        return found
    raise RunError(
        f"--checkpoint {path}: neither a checkpoint (no config.json) nor a run directory "
        "(no checkpoints/)"
    )


def load_checkpoint(
    path: Path, kinds: tuple[type[GlassformerModel], ...], command: str, device: str = "auto"
) -> tuple[GlassformerModel, Path]:
    """Load the model of a checkpoint or run folder for ``command``, which takes ``kinds``."""
    folder = resolve_checkpoint(path)
    model = load_model(folder)
    if not isinstance(model, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise RunError(
            f"{folder} holds a model of class {type(model).__name__}; glassformer {command} "
            f"takes {names}"
        )
    if model.tokenizer is None:
        raise RunError(f"{folder} has no tokenizer.json; glassformer {command} needs one")
    return model.to(resolve_device(device)), folder
