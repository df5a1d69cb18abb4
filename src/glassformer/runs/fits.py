"""``glassformer train``: will the model fit this machine, and what to lower when it does not.

Before the model is built, its training memory (the weights, and a gradient and the
optimizer's state for each parameter that trains, counted from the config: models/budget.py;
with LoRA, frozen parts or fixed embeddings, from the model built on the meta device) is
compared with the memory of the device it will train on. After an out-of-memory error, the
advice names the model's size when its training memory outweighs the batch's activations,
else the batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch

from ..models.budget import Training, check_memory, describe_size, memory_bytes, what_to_lower
from ..models.config import ModelConfig
from ..models.size import activation_bytes, count_parameters
from ..training.optim import optimizer_state
from ..training.runtime import resolve_device
from ..training.trainable import add_run_lora, set_what_trains
from .errors import RunError
from .plan import RunPlan

__all__ = ["ADVICE_NAMES", "check_fits", "memory_advice", "training_memory"]

# the names memory_advice's advice assigns
ADVICE_NAMES = ("run.vocab_size", "train.batch_size", "model.max_len", "train.grad_accum")

BATCH_ADVICE = (
    "lower train.batch_size=N or model.max_len=N (train.grad_accum=N keeps "
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
            training=training_memory(plan, config, architecture),
            shards=world if plan.train.strategy == "fsdp" else 1,
            processes=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
            setting=setting_name(plan),
        )
    except ValueError as err:
        raise RunError(str(err), names=["run.vocab_size"]) from None


def memory_advice(
    plan: RunPlan | None = None, config: ModelConfig | None = None, architecture=None
) -> str:
    """What to lower after running out of memory (the batch while the model is not known);
    the settings and arguments it names are ``ADVICE_NAMES``."""
    if plan is None or config is None:
        return BATCH_ADVICE
    per_process = max(plan.train.batch_size // int(os.environ.get("WORLD_SIZE", "1")), 1)
    activations = activation_bytes(config, per_process * config.max_len)
    training = training_memory(plan, config, architecture)
    if memory_bytes(config, architecture, training=training) <= activations:
        return BATCH_ADVICE
    name = setting_name(plan)
    size = describe_size(config, architecture, training=training, setting=name)
    return f"the model is the larger part: {size}; {what_to_lower(config, architecture, name)}"


def training_memory(plan: RunPlan, config: ModelConfig, architecture: type) -> Training:
    """What ``plan`` trains and keeps: the optimizer's state tensors, and the parameters that
    train when LoRA, train.freeze or fixed embeddings leave some out (counted on the model
    built and set up on the meta device, where nothing is allocated). ValueError when the
    setup names no part of the model."""
    states, words = optimizer_state(plan.train)
    t = plan.train
    if not (t.lora_rank or t.freeze or config.embeddings == "fixed"):
        return Training(states=states, optimizer=words)
    with torch.random.fork_rng(devices=[]), torch.device("meta"):  # global RNG untouched
        trained, total = set_what_trains(add_run_lora(architecture(config), t), t)
    added = total - count_parameters(config, architecture)
    return Training(trained=trained, states=states, optimizer=words, added=added)


def setting_name(plan: RunPlan) -> Callable[[str], str]:
    """A model config field as the user sets it: model.n_layer; the vocabulary with
    run.vocab_size (bpe, word); n_classes comes from the labels."""

    def name(key: str) -> str:
        if key in ("vocab_size", "tgt_vocab_size"):
            return "vocab_size" if plan.tokenizer == "char" else "run.vocab_size"
        return key if key == "n_classes" else f"model.{key}"

    return name
