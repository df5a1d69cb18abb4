"""TrainConfig: the settings of a training run, validated (against ``TrainConfig.CHOICES`` and
``TrainConfig.RANGES``, see limits.py), JSON/TOML-serialisable."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..finetune.lora import DEFAULT_TARGETS
from ..finetune.paths import check_pattern
from ..limits import Range, check_fields
from ..names import STRATEGIES
from ..tasks import TASK_NAMES

__all__ = ["TrainConfig"]

DEVICES = ("auto", "cpu", "cuda", "mps")
EG = '["embed", "blocks.0-3"]'
OPTIMIZERS = ("adamw", "adam", "sgd", "rmsprop")  # torch.optim's classes, see optim.py
MOMENTUM = {"sgd": 0.9, "rmsprop": 0.0}  # the momentum of each when train.momentum is unset


@dataclass
class TrainConfig:
    """Defaults train the built-in character-level Shakespeare GPT on a CPU."""

    task: str = "lm"
    """lm | mlm | seq2seq | classify: one of glassformer/tasks.py."""
    steps: int = 2000
    """Optimizer steps."""
    batch_size: int = 16
    """Examples per micro-batch."""
    grad_accum: int = 1
    """Micro-batches per optimizer step."""
    context: int | None = None
    """lm, mlm: tokens per training window (None: model.max_len)."""
    lr: float = 2e-3
    """Peak learning rate, reached after the warmup."""
    min_lr: float | None = None
    """End of the cosine decay (None: lr / 10)."""
    warmup: int = 100
    """Linear warmup steps."""
    weight_decay: float = 0.1
    """On weight matrices only (adamw: decoupled; others: L2)."""
    optimizer: str = "adamw"
    """The update rule: torch.optim's AdamW, Adam, SGD or RMSprop."""
    beta1: float = 0.9
    """adamw, adam: decay of the gradients' mean (β₁)."""
    beta2: float = 0.99
    """adamw, adam: decay of the squared gradients' mean (β₂)."""
    eps: float = 1e-8
    """adamw, adam, rmsprop: added to the root of the squared mean (ε)."""
    momentum: float | None = None
    """sgd, rmsprop (None: sgd 0.9, rmsprop 0)."""
    nesterov: bool = False
    """sgd: Nesterov momentum."""
    alpha: float = 0.99
    """rmsprop: smoothing constant of the squared gradients."""
    grad_clip: float = 1.0
    """Max global gradient norm (0: no clipping)."""
    eval_every: int = 250
    """Steps between evaluations (0: only at the end)."""
    eval_batches: int = 20
    """Validation batches per evaluation."""
    eval_generate: int = 200
    """seq2seq: validation examples decoded greedily for exact match."""
    save_every: int = 500
    """Steps between checkpoints (0: only at the end)."""
    keep_last: int = 2
    """Periodic checkpoints kept (the best one is kept as well)."""
    seed: int = 1337
    """Seeds the initial weights, the batches and dropout."""
    bf16: bool = False
    """bfloat16 autocast for the forward pass."""
    device: str = "auto"
    """auto (cuda, then mps, then cpu), cpu, cuda or mps."""
    compile: bool = False
    """torch.compile the model."""
    checkpointing: bool = False
    """Activation checkpointing: recompute blocks in backward."""
    reuse_memory: bool = True
    """CPU: malloc keeps freed memory for the next step (memory.py)."""
    log_every: int = 10
    """Steps between metric lines."""
    mlm_probability: float = 0.15
    """mlm: the fraction of tokens chosen for prediction (BERT's 15%)."""
    strategy: str = "ddp"
    """Under torchrun: "ddp" (replicate) or "fsdp" (shard)."""
    freeze: list[str] = field(default_factory=list)
    """Parts kept fixed: embed, blocks.0-3, ... (glassformer.finetune)."""
    lora_rank: int = 0
    """LoRA's rank r on lora_targets (0: no LoRA, every part trains)."""
    lora_alpha: float = 16.0
    """LoRA's update is scaled by lora_alpha / lora_rank."""
    lora_targets: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))
    """Ends of paths: the Linear layers that get LoRA adapters."""
    lora_dropout: float = 0.0
    """Dropout on the input of LoRA's A."""

    # The allowed values, checked in __post_init__ (and min_lr <= lr).
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "task": TASK_NAMES,
        "device": DEVICES,
        "strategy": STRATEGIES,
        "optimizer": OPTIMIZERS,
    }
    RANGES: ClassVar[dict[str, Range]] = {
        "steps": Range(0),
        "batch_size": Range(1),
        "grad_accum": Range(1),
        "context": Range(2),
        "lr": Range(0.0, open_low=True),
        "min_lr": Range(0.0),
        "warmup": Range(0),
        "weight_decay": Range(0.0),
        "beta1": Range(0.0, 1.0, open_high=True),
        "beta2": Range(0.0, 1.0, open_high=True),
        "eps": Range(0.0, open_low=True),
        "momentum": Range(0.0, 1.0, open_high=True),
        "alpha": Range(0.0, 1.0, open_high=True),
        "grad_clip": Range(0.0),
        "eval_every": Range(0),
        "eval_batches": Range(1),
        "eval_generate": Range(0),
        "save_every": Range(0),
        "keep_last": Range(1),
        "seed": Range(0),
        "log_every": Range(1),
        "mlm_probability": Range(0.0, 1.0, open_low=True, open_high=True),
        "lora_rank": Range(0, 2**16),
        "lora_alpha": Range(0.0, open_low=True),
        "lora_dropout": Range(0.0, 1.0, open_high=True),
    }

    def __post_init__(self) -> None:
        check_fields(self)
        if self.min_lr is not None and self.min_lr > self.lr:
            raise ValueError(f"need min_lr <= lr, got lr={self.lr}, min_lr={self.min_lr}")
        for name in ("freeze", "lora_targets"):
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = list(value)
                setattr(self, name, value)
            if not isinstance(value, list):
                raise ValueError(f"{name}={value!r} must be a list of module paths, e.g. {EG}")
            for pattern in value:
                check_pattern(pattern, name)
        if self.lora_rank and not self.lora_targets:
            raise ValueError(
                f"lora_rank={self.lora_rank} needs lora_targets, the Linears to adapt "
                f"(default {list(DEFAULT_TARGETS)})"
            )
        self._check_optimizer()

    def _check_optimizer(self) -> None:
        """The settings that only some optimizers take are refused for the others."""
        name = self.optimizer
        if self.momentum is not None and name not in MOMENTUM:
            raise ValueError(
                f"momentum={self.momentum!r} applies to the optimizers sgd and rmsprop, not "
                f"{name} (its momentum is beta1)"
            )
        if not isinstance(self.nesterov, bool):
            raise ValueError(f"nesterov={self.nesterov!r} must be true or false")
        if self.nesterov and name != "sgd":
            raise ValueError(f"nesterov=True applies to the optimizer sgd only, not {name}")
        if self.nesterov and not self.momentum_value:
            raise ValueError(
                f"nesterov=True needs momentum > 0, got momentum={self.momentum_value!r}"
            )

    @property
    def momentum_value(self) -> float:
        """The momentum sgd or rmsprop runs with (``momentum``, or the optimizer's default)."""
        return MOMENTUM.get(self.optimizer, 0.0) if self.momentum is None else self.momentum

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
