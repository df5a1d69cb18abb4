"""The optimizer (``TrainConfig.optimizer``: AdamW, Adam, SGD or RMSprop, PyTorch's classes)
with weight decay on weight matrices only, and the learning-rate schedule: linear warmup to
``lr`` over ``warmup`` steps, then cosine decay to ``min_lr`` at ``steps``.

    lr(s) = lr · (s + 1) / warmup                                    s < warmup
    lr(s) = min_lr + ½ (lr - min_lr) (1 + cos(π (s - warmup) / (steps - warmup)))   after
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .config import TrainConfig

__all__ = [
    "OPTIMIZERS",
    "build_optimizer",
    "build_scheduler",
    "lr_at",
    "optimizer_name",
    "optimizer_state",
]

# TrainConfig.optimizer -> the torch.optim class that runs it
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adamw": torch.optim.AdamW,
    "adam": torch.optim.Adam,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """``config.optimizer`` over the parameters that train (``requires_grad``). Weight decay
    on every parameter with ≥ 2 dimensions (projections, embeddings), not on biases or norm
    gains: decoupled for AdamW (``θ ← θ - lr·λ·θ`` beside the Adam step), the L2 term
    ``g ← g + λ·θ`` added to the gradient for Adam, SGD and RMSprop (torch's
    ``weight_decay``). AdamW, Adam and SGD use PyTorch's fused kernels on CPU and CUDA;
    RMSprop (no fused kernel) its multi-tensor one where PyTorch picks it (CUDA)."""
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    device = next(model.parameters()).device.type
    sharded = _sharded(decay + no_decay)
    return OPTIMIZERS[config.optimizer](groups, **hyper_parameters(config, device, sharded))


def hyper_parameters(config: TrainConfig, device: str, sharded: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``config.optimizer``'s torch.optim class. ``sharded``: the
    parameters are FSDP's DTensors, which PyTorch's fused SGD kernel does not take (its
    multi-tensor one then runs)."""
    name = config.optimizer
    fused = device in ("cpu", "cuda") and not (sharded and name == "sgd")
    if name in ("adamw", "adam"):
        betas = (config.beta1, config.beta2)
        return {"lr": config.lr, "betas": betas, "eps": config.eps, "fused": fused}
    momentum = config.momentum_value
    if name == "sgd":
        return {"lr": config.lr, "momentum": momentum, "nesterov": config.nesterov, "fused": fused}
    return {"lr": config.lr, "alpha": config.alpha, "eps": config.eps, "momentum": momentum}


def _sharded(params: list[torch.Tensor]) -> bool:
    """Are the parameters DTensors (FSDP)? Only asked in a distributed run."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return False
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in params)


def optimizer_name(optimizer: torch.optim.Optimizer) -> str | None:
    """The ``TrainConfig.optimizer`` name of ``optimizer`` (None: a class not in OPTIMIZERS)."""
    return next((k for k, cls in OPTIMIZERS.items() if type(optimizer) is cls), None)


def state_fields(name: str, group: dict[str, Any]) -> set[str]:
    """The state that optimizer ``name`` keeps for each parameter it has updated, with the
    hyper-parameters of ``group`` (a ``param_groups`` entry): "step" a count, the rest
    tensors of the parameter's shape."""
    if name in ("adamw", "adam"):
        fields = {"step", "exp_avg", "exp_avg_sq"}
        return fields | {"max_exp_avg_sq"} if group.get("amsgrad") else fields
    momentum = {"momentum_buffer"} if group.get("momentum") else set()
    if name == "sgd":
        return momentum
    fields = {"step", "square_avg"} | momentum
    return fields | {"grad_avg"} if group.get("centered") else fields


def optimizer_state(config: TrainConfig) -> tuple[int, str]:
    """How many tensors of a parameter's shape ``config.optimizer`` keeps for each parameter
    that trains, and what they are: (2, "AdamW's two moments"), (1, "SGD's momentum"), (0,
    "") for SGD without momentum."""
    fields = state_fields(config.optimizer, hyper_parameters(config, "cpu")) - {"step"}
    owner = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop"}
    names = {"exp_avg": "two moments", "square_avg": "square average", "grad_avg": "mean",
             "momentum_buffer": "momentum"}  # fmt: skip
    words = [w for f, w in names.items() if f in fields]  # exp_avg_sq: the second moment
    if not words:
        return 0, ""
    return len(fields), f"{owner[config.optimizer]}'s {' and '.join(words)}"


def lr_at(step: int, config: TrainConfig) -> float:
    """The learning rate of optimizer step ``step`` (0-based)."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(config.steps - config.warmup, 1)
    progress = min((step - config.warmup) / span, 1.0)
    lo = config.final_lr
    return lo + 0.5 * (config.lr - lo) * (1 + math.cos(math.pi * progress))


def build_scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, config) / config.lr)
