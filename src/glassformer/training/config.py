"""TrainConfig: the settings of a training run, validated, JSON/TOML-serialisable."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["TASKS", "TrainConfig"]

TASKS = ("lm", "mlm", "seq2seq", "classify")
DEVICES = ("auto", "cpu", "cuda", "mps")
STRATEGIES = ("ddp", "fsdp")


@dataclass
class TrainConfig:
    """Defaults train the built-in character-level Shakespeare GPT on a CPU."""

    task: str = "lm"  # lm (DTraining) | mlm (ETraining) | seq2seq (EDTraining) | classify
    steps: int = 2000  # optimizer steps
    batch_size: int = 16  # examples per micro-batch
    grad_accum: int = 1  # micro-batches per optimizer step
    lr: float = 2e-3  # peak learning rate
    min_lr: float | None = None  # end of the cosine decay (None: lr / 10)
    warmup: int = 100  # linear warmup steps
    weight_decay: float = 0.1  # on weight matrices only
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # max global gradient norm (0: no clipping)
    eval_every: int = 250  # steps between evaluations (0: only at the end)
    eval_batches: int = 20  # validation batches per evaluation
    eval_generate: int = 200  # seq2seq: validation examples decoded greedily for exact match
    save_every: int = 500  # steps between checkpoints (0: only at the end)
    keep_last: int = 2  # periodic checkpoints kept (the best one is kept as well)
    seed: int = 1337
    bf16: bool = False  # bfloat16 autocast for the forward pass
    device: str = "auto"
    compile: bool = False  # torch.compile the model
    checkpointing: bool = False  # activation checkpointing: recompute blocks in backward
    reuse_memory: bool = True  # CPU: malloc keeps freed memory for the next step (memory.py)
    log_every: int = 10  # steps between metric lines
    mlm_probability: float = 0.15
    strategy: str = "ddp"  # under torchrun: "ddp" (replicate) or "fsdp" (shard)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r} is not known; choose one of {TASKS}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} is not known; choose one of {STRATEGIES}")
        if self.device not in DEVICES:
            raise ValueError(f"device={self.device!r} is not known; choose one of {DEVICES}")
        for name in ("steps", "eval_every", "save_every", "warmup", "eval_generate"):
            _int(name, getattr(self, name), 0)
        for name in ("batch_size", "grad_accum", "eval_batches", "keep_last", "log_every"):
            _int(name, getattr(self, name), 1)
        _int("seed", self.seed, 0)
        for name in ("lr", "beta1", "beta2", "weight_decay", "grad_clip", "mlm_probability"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"{name}={v!r} must be a finite number")
        if self.lr <= 0 or (self.min_lr is not None and not 0 <= self.min_lr <= self.lr):
            raise ValueError(
                f"need lr > 0 and 0 <= min_lr <= lr, got lr={self.lr}, min_lr={self.min_lr}"
            )
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(f"beta1={self.beta1}, beta2={self.beta2} must be in [0, 1)")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError("weight_decay and grad_clip must be >= 0")
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"mlm_probability={self.mlm_probability} must be in (0, 1)")

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else self.min_lr

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training settings {unknown}; allowed: {sorted(known)}")
        return cls(**data)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)


def _int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} must be an int >= {low}")
