"""A model from a checkpoint folder or a run folder: ``glassformer.load_model(DIR)``, and what
``--checkpoint DIR`` of the commands reads.

A checkpoint folder has config.json (models/checkpoint.py); a run folder (``RUN_FILE``, and
the trainer's checkpoints folder, training/layout.py) gives its best checkpoint when the newest
trainer.json records one, else its newest checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from ..models import GlassformerModel
from ..models import load_model as load_checkpoint_folder
from ..training.layout import CHECKPOINTS, best_or_latest
from .errors import RunError

__all__ = ["RUN_FILE", "load_model", "resolve_checkpoint"]

RUN_FILE = "run.json"  # the run's plan and settings (record.py)


def resolve_checkpoint(path: Path) -> Path:
    """A checkpoint folder from a checkpoint or run folder (see the module docstring)."""
    if not path.exists():
        raise RunError(f"{path}: no such directory")
    if (path / "config.json").is_file():
        return path
    if (path / CHECKPOINTS).is_dir() or (path / RUN_FILE).is_file():
        found = best_or_latest(path)
        if found is None:
            raise RunError(f"{path}: a run folder with no checkpoint yet")
        return found
    raise RunError(
        f"{path}: neither a checkpoint (no config.json) nor a run directory (no {CHECKPOINTS}/)"
    )


def load_model(path: str | Path, *, device=None) -> GlassformerModel:
    """The model of a checkpoint folder, or of a run folder: its best checkpoint when the
    newest trainer.json records one, else its newest (with its tokenizer when it has one).

    Raises:
        ValueError: ``path`` is neither, or its run has no checkpoint yet, or the checkpoint
            is damaged (naming the file).
    """
    return load_checkpoint_folder(resolve_checkpoint(Path(path)), device=device)
