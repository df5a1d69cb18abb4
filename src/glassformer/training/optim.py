"""AdamW with weight decay on weight matrices only, and the learning-rate schedule:
linear warmup to ``lr`` over ``warmup`` steps, then cosine decay to ``min_lr`` at ``steps``.

    lr(s) = lr · (s + 1) / warmup                                    s < warmup
    lr(s) = min_lr + ½ (lr - min_lr) (1 + cos(π (s - warmup) / (steps - warmup)))   after
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import TrainConfig

__all__ = ["build_optimizer", "build_scheduler", "lr_at"]


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """Decay every parameter with ≥ 2 dimensions (projections, embeddings); not biases or
    norm gains. Uses PyTorch's fused AdamW kernel where the device supports it."""
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    device = next(model.parameters()).device.type
    fused = device in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), fused=fused)


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
