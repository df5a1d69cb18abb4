"""The gradient of one optimizer step: ``grad_accum`` micro-batches, each a forward pass (in
bf16 autocast when ``train.bf16``) and a backward pass of its loss / grad_accum, so that the
gradients add up to those of the mean loss over the step's batch. Under DDP the gradients are
all-reduced once, on the last micro-batch; under torchrun each process takes its share of every
batch (batches.py) and the loss is the mean over the processes.
"""

from __future__ import annotations

import contextlib

import torch

from .batches import BatchStream
from .config import TrainConfig
from .distributed import Cluster
from .runtime import autocast

__all__ = ["accumulate_gradients"]


def accumulate_gradients(
    forward,
    stream: BatchStream,
    step: int,
    config: TrainConfig,
    cluster: Cluster,
    device: torch.device,
    ddp: bool = False,
) -> tuple[float, int]:
    """Forward and backward the micro-batches of step ``step`` (0-based) through ``forward``
    (the model, or its DDP/FSDP/compiled wrapper); (mean loss, real tokens seen)."""
    total, tokens = 0.0, 0
    rank, world = cluster.rank, cluster.world_size
    for j in range(config.grad_accum):
        batch = stream.batch(step * config.grad_accum + j, rank, world)
        mask = batch.get("attention_mask")
        tokens += int(mask.sum()) if mask is not None else batch["input_ids"].numel()
        batch = _to_device(batch, config.task, device)
        last = j == config.grad_accum - 1
        # DDP: all-reduce the gradients only on the last micro-batch of the step
        with contextlib.nullcontext() if last or not ddp else forward.no_sync():
            with autocast(device, config.bf16):
                out = forward(**batch)
            (out.loss / config.grad_accum).backward()
        total += float(out.loss.detach())
    loss = total / config.grad_accum
    if cluster.distributed:  # the mean over processes, and all their tokens
        loss, tokens = cluster.sum([loss, tokens])
        loss, tokens = loss / world, int(tokens)
    return loss, tokens


def _to_device(batch: dict[str, torch.Tensor], task: str, device) -> dict[str, torch.Tensor]:
    if task == "lm" and bool(batch["attention_mask"].all()):
        del batch["attention_mask"]  # no padding: the causal kernel needs no mask
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}
