"""LoRA (Hu et al., 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): a frozen
weight matrix W (out, in) plus a trained update of rank r,

    y = W x + b + (alpha / r) · B A x        A (r, in), B (out, r)

A starts as PEFT starts it (Kaiming-uniform, ``a = √5``, as nn.Linear's own weights) and B at
zero, so before the first step the model computes exactly what it computed without LoRA.
Dropout, when asked for, is applied to the x that enters A only.

``apply_lora(model, targets, rank, alpha)`` wraps each nn.Linear whose path ends with a target
(paths.py: ``attn.q_proj`` is every block's W^Q) in a ``LoRALinear`` and freezes
every other parameter of the model, the wrapped W and b included. A target whose last segment
is ``in_proj`` (the fused [W^Q; W^K; W^V] attention held before its projections were separate
modules) names the projections that replaced it: ``q_proj``, ``k_proj``, ``v_proj``
(``qk_proj``), each adapted on its own. ``merge_lora(model)`` folds
the update into W, W <- W + (alpha / r) B A, and puts the plain nn.Linear back: the model is a
plain model again, which checkpoints, ``load_model`` and ``to_huggingface`` read.

A ``LoRALinear`` keeps the names code reads from a Linear: ``weight`` is the effective matrix
W + (alpha / r) B A (computed on each read, with its gradient to A and B), ``bias`` is b,
``in_features`` and ``out_features`` W's. So ``hook_result`` (which reads ``out_proj.weight``)
and the circuits' weight analyses (``projection_weights``) see the adapted model; there the
LoRA dropout is not applied. Code that looks for nn.Linear modules
(the flop count, fast/layout.py) finds the frozen base Linear inside the wrapper, ``.base``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..models.legacy_keys import FUSED
from .freeze import select
from .paths import check_pattern, ends_with, shown_names

__all__ = ["DEFAULT_TARGETS", "LoRALinear", "apply_lora", "lora_layers", "merge_lora"]

DEFAULT_TARGETS = ("attn.in_proj", "attn.out_proj")  # the self-attention projections


class LoRALinear(nn.Module):
    """``base`` (a frozen nn.Linear) plus the low-rank update (alpha / r) B A."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float = 0.0) -> None:
        super().__init__()
        rank, alpha, dropout = _check_lora(rank, alpha, dropout, "LoRALinear")
        self.base, self.rank, self.alpha = base, rank, float(alpha)
        self.scaling = self.alpha / rank
        like = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, **like))  # (r, in)
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, **like))  # (out, r)
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        base.requires_grad_(False)

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    @property
    def weight(self) -> Tensor:
        """W + (alpha / r) B A, (out, in)."""
        return self.base.weight + self.scaling * (self.lora_B @ self.lora_A)

    @property
    def bias(self) -> Tensor | None:
        return self.base.bias

    def forward(self, x: Tensor) -> Tensor:
        """W x + b + (alpha / r) B A x, x (..., in) -> (..., out)."""
        update = F.linear(F.linear(self.lora_dropout(x), self.lora_A), self.lora_B)  # (..., out)
        return self.base(x) + self.scaling * update

    def plain_state(self) -> dict[str, Tensor]:
        """The tensors of the nn.Linear this layer stands for, ``weight`` W + (alpha / r) B A
        (computed, W unchanged) and ``bias`` b: what ``save_pretrained`` writes for it."""
        state = {"weight": (self.base.weight + self.scaling * (self.lora_B @ self.lora_A)).detach()}
        if self.base.bias is not None:
            state["bias"] = self.base.bias.detach()
        return state

    def merged(self) -> nn.Linear:
        """``base`` with W <- W + (alpha / r) B A (in place), to put back in the model."""
        with torch.no_grad():
            self.base.weight.add_(self.scaling * (self.lora_B @ self.lora_A))
        return self.base

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha:g}"


def apply_lora(
    model: nn.Module,
    targets: list[str] | tuple[str, ...] = DEFAULT_TARGETS,
    rank: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
    *,
    keep: list[str] | tuple[str, ...] = (),
    where: str = "lora_targets",
    rank_name: str = "rank",
) -> list[str]:
    """Wrap every nn.Linear of ``model`` whose path ends with one of ``targets`` in a
    ``LoRALinear``; freeze every other parameter (the wrapped weights included) except those
    of the parts ``keep`` names by full path (e.g. a new ``classifier``). Returns the wrapped
    paths. A target that names no Linear, a Linear whose weight is tied to another part
    (the unembedding of ``tie_embeddings``), or a ``rank`` above a target's min(in, out) (the
    largest rank B A (out, in) can have) is refused before anything changes; ``where`` and
    ``rank_name`` name the targets and the rank in messages."""
    rank, alpha, dropout = _check_lora(rank, alpha, dropout, "LoRA")
    if isinstance(targets, str) or not isinstance(targets, list | tuple) or not targets:
        raise ValueError(
            f"{where}={targets!r} must be a non-empty list of module paths, e.g. "
            f"{list(DEFAULT_TARGETS)}"
        )
    linears = _linears(model)
    chosen: dict[str, nn.Linear] = {}
    for target in targets:
        check_pattern(target, where)
        found = {path: m for path, m in linears.items()
                 if any(ends_with(t, path) for t in _unfused(target))}  # fmt: skip
        if not found:
            raise ValueError(
                f"{where}: {target!r} names no nn.Linear of the {type(model).__name__}; its "
                f"Linears: {shown_names(linears)}"
            )
        chosen.update(found)
    shared = _shared(model)
    for path, m in chosen.items():
        if id(m.weight) in shared:
            raise ValueError(
                f"{where}: {path}.weight is tied to {shared[id(m.weight)]} (one matrix): LoRA "
                f"cannot adapt it alone; choose other targets (e.g. {list(DEFAULT_TARGETS)}), "
                f"or train the tied matrix without LoRA ({rank_name}=0; train.freeze keeps "
                "other parts fixed); a model built without --init-from can also untie it "
                "(model.tie_embeddings=false)"
            )
    _check_rank(chosen, rank, rank_name)
    kept = _kept(model, keep)
    model.requires_grad_(False)
    for path, m in chosen.items():
        parent, _, name = path.rpartition(".")
        setattr(model.get_submodule(parent), name, LoRALinear(m, rank, alpha, dropout))
    for p in kept:
        p.requires_grad_(True)
    return [path for path in linears if path in chosen]  # in the model's order


def _unfused(target: str) -> list[str]:
    """``target``, or for a fused ``in_proj`` the projections that replaced it."""
    head, _, last = target.rpartition(".")
    if last != FUSED:
        return [target]
    return [f"{head}.{p}" if head else p for p in ("q_proj", "k_proj", "v_proj", "qk_proj")]


def lora_layers(model: nn.Module) -> dict[str, LoRALinear]:
    """Every LoRALinear of ``model`` by path."""
    return {path: m for path, m in model.named_modules() if isinstance(m, LoRALinear)}


def merge_lora(model: nn.Module) -> list[str]:
    """W <- W + (alpha / r) B A in every LoRALinear, each replaced by its (plain) nn.Linear;
    the merged paths. The merged weights keep ``requires_grad=False``."""
    layers = lora_layers(model)
    for path, m in layers.items():
        parent, _, name = path.rpartition(".")
        setattr(model.get_submodule(parent), name, m.merged())
    return list(layers)


def _linears(model: nn.Module) -> dict[str, nn.Linear]:
    """The nn.Linear modules LoRA may wrap: not one inside a LoRALinear already."""
    inside = {f"{path}.base" for path in lora_layers(model)}
    return {
        path: m
        for path, m in model.named_modules()
        if isinstance(m, nn.Linear) and path not in inside
    }


def _shared(model: nn.Module) -> dict[int, str]:
    """id of each parameter held under two names -> its first name."""
    first: dict[int, str] = {}
    shared: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            shared[id(p)] = first[id(p)]
        first.setdefault(id(p), name)
    return shared


def _check_rank(chosen: dict[str, nn.Linear], rank: int, rank_name: str) -> None:
    """``ValueError`` when ``rank`` exceeds min(in, out) of a chosen Linear: B A (out, in)
    has rank at most that, and a larger r only trains more numbers for the same update."""
    path, m = min(chosen.items(), key=lambda item: min(item[1].in_features, item[1].out_features))
    d_in, d_out = m.in_features, m.out_features
    largest = min(d_in, d_out)
    if rank > largest:
        raise ValueError(
            f"{rank_name}={rank} is larger than {path} allows: a Linear {d_in} -> {d_out}, "
            f"whose update B A has rank at most min({d_in}, {d_out}) = {largest}; allowed: "
            f"{rank_name} from 1 to {largest}"
        )


def _kept(model: nn.Module, keep) -> list[nn.Parameter]:
    return list(select(model, list(keep), where="LoRA keep").values()) if keep else []


def _check_lora(rank, alpha, dropout, who: str) -> tuple[int, float, float]:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"{who}: rank={rank!r} must be an int >= 1")
    number = isinstance(alpha, int | float) and not isinstance(alpha, bool)
    if not (number and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"{who}: alpha={alpha!r} must be a finite number > 0")
    number = isinstance(dropout, int | float) and not isinstance(dropout, bool)
    if not (number and 0 <= dropout < 1):
        raise ValueError(f"{who}: dropout={dropout!r} must be a number in [0, 1)")
    return rank, float(alpha), float(dropout)
