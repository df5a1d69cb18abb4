"""``glassformer train``: will the model fit this machine, and what to lower when it does not.

Before the model is built, its training memory (weights, gradients, AdamW's two moments,
counted from the config: models/budget.py) is compared with the memory of the device it will
train on. After an out-of-memory error, the advice names the model's size when its training
memory outweighs the batch's activations, else the batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch

from ..models.budget import check_memory, describe_size, memory_bytes, what_to_lower
from ..models.config import ModelConfig
from ..models.size import activation_bytes
from ..training.runtime import resolve_device
from .errors import RunError
from .plan import RunPlan

__all__ = ["check_fits", "memory_advice"]

BATCH_ADVICE = (
    "lower --set train.batch_size or --set model.max_len (--set train.grad_accum=N keeps "
    "the batch per step with 1/N of the memory)"
)


def check_fits(plan: RunPlan, config: ModelConfig, architecture: type) -> None:
    """Refuse (RunError) a model whose training does not fit, naming what to lower."""
    device = resolve_device(plan.train.device)
    if device.type == "cuda":  # under torchrun, process i uses GPU LOCAL_RANK
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        check_memory(
            config,
            architecture,
            device=device,
            training=True,
            shards=world if plan.train.strategy == "fsdp" else 1,
            processes=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
            setting=setting_name(plan),
        )
    except ValueError as err:
        raise RunError(str(err)) from None


def memory_advice(
    plan: RunPlan | None = None, config: ModelConfig | None = None, architecture=None
) -> str:
    """What to lower after running out of memory (the batch while the model is not known)."""
    if plan is None or config is None:
        return BATCH_ADVICE
    per_process = max(plan.train.batch_size // int(os.environ.get("WORLD_SIZE", "1")), 1)
    activations = activation_bytes(config, per_process * config.max_len)
    if memory_bytes(config, architecture, training=True) <= activations:
        return BATCH_ADVICE
    name = setting_name(plan)
    size = describe_size(config, architecture, training=True, setting=name)
    return f"the model is the larger part: {size}; {what_to_lower(config, architecture, name)}"


def setting_name(plan: RunPlan) -> Callable[[str], str]:
    """A model config field as the user sets it: model.n_layer; the vocabulary with
    --vocab-size (bpe, word); n_classes comes from the labels."""

    def name(key: str) -> str:
        if key in ("vocab_size", "tgt_vocab_size"):
            return "vocab_size" if plan.tokenizer == "char" else "--vocab-size"
        return key if key == "n_classes" else f"model.{key}"

    return name
