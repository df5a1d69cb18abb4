"""A model with LoRA layers in a checkpoint: a plain model plus what resumes the adapters.

    model.safetensors   the plain model: each wrapped Linear's weight merged,
                        W + (alpha / r) B A, under the Linear's own names (``p.weight``,
                        ``p.bias``), so every command and ``to_huggingface`` read it
    lora.safetensors    for each wrapped Linear ``p``: ``p.lora_A``, ``p.lora_B`` and
                        ``p.base.weight``, the unmerged W

The merged weight is not W: rebuilding the wrappers from ``lora.safetensors`` (and the biases
from model.safetensors) gives back bit for bit the tensors that were saved, so a resumed run
continues as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from ..models.legacy_keys import FUSED
from .lora import LoRALinear

__all__ = ["LORA_FILE", "join_state", "plain_modules", "split_state"]

LORA_FILE = "lora.safetensors"


@contextmanager
def plain_modules(model: nn.Module, layers: dict[str, LoRALinear]) -> Iterator[None]:
    """Inside, each LoRALinear of ``layers`` (path -> module) is replaced by its base
    nn.Linear, so the model's names are a plain model's; put back when it exits."""
    for path, m in layers.items():
        parent, _, name = path.rpartition(".")
        setattr(model.get_submodule(parent), name, m.base)
    try:
        yield
    finally:
        for path, m in layers.items():
            parent, _, name = path.rpartition(".")
            setattr(model.get_submodule(parent), name, m)


def split_state(
    state: dict[str, torch.Tensor], layers: dict[str, LoRALinear]
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(the plain model's state: each wrapped Linear's merged weight and its bias under
    ``p.weight``, ``p.bias``; the LoRA tensors of lora.safetensors) from the state of the
    model with its wrappers."""
    plain, lora = dict(state), {}
    for p, m in layers.items():
        a, b = plain.pop(f"{p}.lora_A"), plain.pop(f"{p}.lora_B")
        w = plain.pop(f"{p}.base.weight")
        plain[f"{p}.weight"] = w + m.scaling * (b @ a)  # as LoRALinear.merged computes it
        if f"{p}.base.bias" in plain:
            plain[f"{p}.bias"] = plain.pop(f"{p}.base.bias")
        lora.update({f"{p}.lora_A": a, f"{p}.lora_B": b, f"{p}.base.weight": w})
    return plain, {k: v.detach().contiguous().cpu() for k, v in lora.items()}


def join_state(
    plain: dict[str, torch.Tensor],
    lora: dict[str, torch.Tensor],
    layers: dict[str, LoRALinear],
    where: Path | str,
) -> dict[str, torch.Tensor]:
    """The state of the model with its wrappers from the plain state and the LoRA tensors;
    ``ValueError`` naming ``where`` (lora.safetensors) when a tensor is missing, extra, of
    another shape or dtype, or not finite."""
    want: dict[str, torch.Tensor] = {}
    for p, m in layers.items():
        want.update({f"{p}.lora_A": m.lora_A, f"{p}.lora_B": m.lora_B})
        want[f"{p}.base.weight"] = m.base.weight
    missing, extra = sorted(set(want) - set(lora)), sorted(set(lora) - set(want))
    fused = [name for name in extra if f".{FUSED}." in name]
    if fused:  # one A for [W^Q; W^K; W^V]: three adapters with an A each train otherwise
        raise ValueError(
            f"{where}: {fused[0]!r} is an adapter of the fused attention projection in_proj "
            "([W^Q; W^K; W^V], one A for the three), which models now hold as q_proj, k_proj, "
            "v_proj with an adapter each: the run cannot resume exactly. model.safetensors "
            "(the merged weights) loads: start a new run from it (init_from)"
        )
    if missing or extra:
        raise ValueError(
            f"{where}: the LoRA tensors do not fit this run's LoRA layers: missing "
            f"{missing[:5]}, unexpected {extra[:5]}"
        )
    for name, live in want.items():
        got = lora[name]
        if got.shape != live.shape or got.dtype != live.dtype:
            raise ValueError(
                f"{where}: tensor {name!r} is {got.dtype} {tuple(got.shape)}; this run needs "
                f"{live.dtype} {tuple(live.shape)} (the same train.lora_rank and model)"
            )
        if got.is_floating_point() and not bool(torch.isfinite(got).all()):
            raise ValueError(f"{where}: tensor {name!r} holds NaN or infinite values")
    state = dict(plain)
    for p in layers:
        state.pop(f"{p}.weight", None)
        if f"{p}.bias" in state:
            state[f"{p}.base.bias"] = state.pop(f"{p}.bias")
    state.update({name: lora[name] for name in want})
    return state
