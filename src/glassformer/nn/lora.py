"""LoRA (Hu et al., 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): a frozen
weight matrix W (out, in) plus a trained update of rank r,

    y = W x + b + (alpha / r) · B A x        A (r, in), B (out, r)

``LoRALinear`` is an nn.Linear: it holds W and b itself, under the Linear's own names
(``weight``, ``bias``), and beside them ``lora_A`` and ``lora_B``. So a model with adapters has
the plain model's state-dict names plus ``<path>.lora_A`` and ``<path>.lora_B``, and a
checkpoint is read and written without renaming anything. ``weight`` is W, never the adapted
matrix: code that needs the matrix the layer applies reads ``merged_weight()``, W + (alpha / r)
B A, or ``effective_weight(linear)``, which is ``weight`` for a plain Linear. Everything else
calls the layer, so the LoRA dropout (on the x that enters A) applies whenever it trains.

A starts as PEFT starts it (Kaiming-uniform, ``a = √5``, as nn.Linear's own weights) and B at
zero, so before the first step the layer computes exactly what the Linear computed.

``adapt(model, paths, rank, alpha, dropout)`` puts a LoRALinear in place of each Linear
``paths`` names, keeping its W and b (the same Parameters); ``adapters(model)`` describes what
a model holds (what config.json records, models/checkpoint.py, so that a checkpoint with
adapters loads as the same model). Choosing the layers, freezing the rest and merging back
are glassformer.finetune's.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["LoRALinear", "adapt", "adapters", "effective_weight"]


class LoRALinear(nn.Linear):
    """An nn.Linear (W, b) plus the low-rank update (alpha / r) B A; build one from a Linear
    with ``LoRALinear.around(linear, rank, alpha, dropout)``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        rank: int,
        alpha: float,
        dropout: float = 0.0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        rank, alpha, dropout = check_lora(rank, alpha, dropout, "LoRALinear")
        self.rank, self.alpha, self.scaling = rank, alpha, alpha / rank
        like = {"device": self.weight.device, "dtype": self.weight.dtype}
        self.lora_A = nn.Parameter(torch.empty(rank, in_features, **like))  # (r, in)
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank, **like))  # (out, r)
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = nn.Dropout(dropout) if dropout else nn.Identity()

    @classmethod
    def around(cls, linear: nn.Linear, rank: int, alpha: float, dropout: float = 0.0):
        """A LoRALinear holding ``linear``'s own W and b (the same Parameters, not copies);
        A and B on their device and dtype."""
        w = linear.weight
        sizes = (linear.in_features, linear.out_features, linear.bias is not None)
        with torch.device("meta"):  # nothing allocated: W and b are the Linear's, A and B below
            layer = cls(*sizes, rank=rank, alpha=alpha, dropout=dropout, dtype=w.dtype)
        layer.weight, layer.bias = w, linear.bias
        like = {"device": w.device, "dtype": w.dtype}
        layer.lora_A = nn.Parameter(torch.empty(layer.rank, linear.in_features, **like))
        nn.init.kaiming_uniform_(layer.lora_A, a=math.sqrt(5))
        layer.lora_B = nn.Parameter(torch.zeros(linear.out_features, layer.rank, **like))
        return layer

    def forward(self, x: Tensor) -> Tensor:
        """W x + b + (alpha / r) B A x, x (..., in) -> (..., out)."""
        update = F.linear(F.linear(self.lora_dropout(x), self.lora_A), self.lora_B)  # (..., out)
        return super().forward(x) + self.scaling * update

    def merged_weight(self) -> Tensor:
        """W + (alpha / r) B A (out, in): the matrix the layer applies (with its gradient to
        A and B), for code that reads the weight instead of calling the layer."""
        return self.weight + self.scaling * (self.lora_B @ self.lora_A)

    def merged(self) -> nn.Linear:
        """A plain nn.Linear with W + (alpha / r) B A and b (W is left as it is)."""
        with torch.device("meta"):
            plain = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        plain.weight = nn.Parameter(self.merged_weight().detach(), requires_grad=False)
        plain.bias = self.bias
        return plain

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank={self.rank}, alpha={self.alpha:g}"


def effective_weight(linear: nn.Linear) -> Tensor:
    """The matrix ``linear`` applies (out, in): ``merged_weight()`` for a LoRALinear, else
    ``weight``."""
    return linear.merged_weight() if isinstance(linear, LoRALinear) else linear.weight


def adapt(
    model: nn.Module, paths: list[str], rank: int, alpha: float, dropout: float = 0.0
) -> None:
    """Put a LoRALinear (``LoRALinear.around``) in place of the nn.Linear at each of
    ``paths`` (full module paths), in the order given; ``ValueError`` naming a path that is
    not a plain nn.Linear of ``model``."""
    for path in paths:
        linear = model.get_submodule(path) if path else model
        if type(linear) is not nn.Linear:
            raise ValueError(f"LoRA: {path!r} is not an nn.Linear of the {type(model).__name__}")
    for path in paths:
        parent, _, name = path.rpartition(".")
        linear = model.get_submodule(path)
        setattr(model.get_submodule(parent), name, LoRALinear.around(linear, rank, alpha, dropout))


def adapters(model: nn.Module) -> dict[str, Any] | None:
    """What ``model``'s LoRA layers are, as config.json records it: ``{"paths": [...], "rank":
    r, "alpha": a, "dropout": p}`` (one setting for every layer, as ``adapt`` makes them);
    None without LoRA layers."""
    layers = {path: m for path, m in model.named_modules() if isinstance(m, LoRALinear)}
    if not layers:
        return None
    settings = {(m.rank, m.alpha, _dropout(m)) for m in layers.values()}
    if len(settings) > 1:
        raise ValueError(f"LoRA layers of different rank, alpha or dropout: {sorted(settings)}")
    rank, alpha, dropout = settings.pop()
    return {"paths": list(layers), "rank": rank, "alpha": alpha, "dropout": dropout}


def _dropout(layer: LoRALinear) -> float:
    return layer.lora_dropout.p if isinstance(layer.lora_dropout, nn.Dropout) else 0.0


def check_lora(rank, alpha, dropout, who: str) -> tuple[int, float, float]:
    """(rank, alpha, dropout) checked: an int >= 1, a finite number > 0, a number in [0, 1);
    ``ValueError`` naming ``who`` and the value otherwise."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"{who}: rank={rank!r} must be an int >= 1")
    number = isinstance(alpha, int | float) and not isinstance(alpha, bool)
    if not (number and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"{who}: alpha={alpha!r} must be a finite number > 0")
    number = isinstance(dropout, int | float) and not isinstance(dropout, bool)
    if not (number and 0 <= dropout < 1):
        raise ValueError(f"{who}: dropout={dropout!r} must be a number in [0, 1)")
    return rank, float(alpha), float(dropout)
