"""Training: DTraining, ETraining, EDTraining (Algorithms 13, 12, 11 of
Phuong & Hutter, "Formal Algorithms for Transformers" (2022)) and classification, with checkpoints
that resume exactly."""

from .batches import BatchStream
from .config import TrainConfig
from .divergence import DivergedError
from .errors import DiskFullError, TrainingError
from .evaluate import evaluate
from .optim import build_optimizer, build_scheduler, lr_at
from .runtime import resolve_device
from .trainer import Trainer

__all__ = [
    "BatchStream",
    "DiskFullError",
    "DivergedError",
    "TrainConfig",
    "Trainer",
    "TrainingError",
    "build_optimizer",
    "build_scheduler",
    "evaluate",
    "lr_at",
    "resolve_device",
]
