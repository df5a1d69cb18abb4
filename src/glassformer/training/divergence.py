"""A run that diverged: a training loss, gradient norm, validation loss or weights that are
not finite (NaN or infinite) stop it with ``DivergedError``, whose message says what was not
finite at which step, what to try, and where the last good checkpoint is (or that none was
written). Weights that are not finite before the first step are refused instead: no learning
rate trains from them.

Every checkpoint a run writes holds finite weights and a finite best loss, so "the last good
checkpoint" is the newest one in the folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from ..named import naming
from .config import TrainConfig
from .errors import TrainingError
from .layout import latest_checkpoint

__all__ = ["DivergedError", "diverged", "finite_record", "non_finite_parameter"]


class DivergedError(TrainingError):
    """The run diverged at ``step`` (the message says what and what to try)."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


def non_finite_parameter(model: torch.nn.Module) -> str | None:
    """The name of the first parameter holding NaN or infinite values (this process's shard
    under FSDP), or None when every one is finite."""
    for name, p in model.named_parameters():
        local = p.to_local() if hasattr(p, "to_local") else p  # an FSDP DTensor: its shard
        if not bool(torch.isfinite(local.detach()).all()):
            return name
    return None


def diverged(
    step: int, what: str, config: TrainConfig, run_dir: Path | None
) -> DivergedError:
    """``step {step}: {what}; lower train.lr ...; the last good checkpoint is ...``."""
    smaller = f"{config.lr / 10:g}"
    advice = f"lower train.lr (it is {config.lr:g}; e.g. train.lr={smaller})"
    if not config.grad_clip:
        advice += " or clip gradients (train.grad_clip=1.0)"
    error = DivergedError(f"step {step}: {what}; {advice}{_last_good(run_dir)}", step)
    return naming(error, names=["train.lr", "train.grad_clip"])


def _last_good(run_dir: Path | None) -> str:
    if run_dir is None:
        return ""
    found = latest_checkpoint(run_dir)
    if found is None:
        return f"; the run stopped before its first checkpoint: {run_dir} holds none"
    return f"; the last good checkpoint is {found}"


def finite_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every number that is not finite as None, so that metrics.jsonl stays
    strict JSON (a NaN is written ``null``, not the bare ``NaN`` JSON does not allow)."""
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()
    }
