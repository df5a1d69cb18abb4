"""Data-parallel training under ``torchrun``: one process per device, each on its own share
of every batch, gradients averaged across processes.

    torchrun --nproc_per_node 2 -m glassformer train ...          (one machine)
    torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 \\
        --rdzv-backend c10d --rdzv-endpoint HOST:29500 -m glassformer train ...

``Cluster.from_env()`` reads torchrun's RANK / WORLD_SIZE / LOCAL_RANK and starts the process
group (nccl on CUDA, gloo on CPU). Strategies:

  * ``ddp``: every process holds the whole model (DistributedDataParallel); gradients are
    all-reduced during backward. For models that fit one device.
  * ``fsdp``: parameters, gradients and optimizer moments are sharded across processes
    (PyTorch's fully_shard, one unit per block); for models that do not fit one device.

Checkpoints are always gathered into the single-process format (full tensors, parameter
names), so a run can resume with any number of processes and either strategy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from ..names import STRATEGIES

__all__ = ["STRATEGIES", "Cluster", "wrap_model"]


@dataclass(frozen=True)
class Cluster:
    """Where this process stands: rank r of world_size processes (1 without torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, device_type: str) -> Cluster:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        cluster = cls(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
        if not dist.is_initialized():
            dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
        return cluster

    def device(self, device: torch.device) -> torch.device:
        """With several GPUs per machine, process i uses GPU ``local_rank``."""
        if device.type == "cuda" and self.distributed:
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return device

    def check_batch(self, batch_size: int, n: int | None = None) -> None:
        """Data parallelism gives each process an equal share of every batch: ``batch_size``
        (the global batch) must split evenly, and so must a training set of ``n`` < batch_size
        examples, which is one batch of n."""
        world = self.world_size
        if batch_size % world:
            raise ValueError(
                f"batch_size={batch_size} (the global batch) must be divisible by the {world} "
                "processes"
            )
        if n is not None and n % world:
            raise ValueError(
                f"the training data has {n} examples (a language model's: windows of max_len "
                f"tokens), fewer than batch_size={batch_size}, and a batch of {n} cannot be "
                f"shared evenly by the {world} processes: allowed at least {batch_size} "
                f"training examples, or a number of processes that divides {n}"
            )

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over all processes (identity when alone)."""
        if not self.distributed:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        if dist.get_backend() == "nccl":
            t = t.cuda()
        dist.all_reduce(t)
        return t.cpu().tolist()

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def raise_together(self, error: Exception | None) -> None:
        """Raise ``error`` here and a ``ValueError`` on every other process when any process
        met one. Checks that only rank 0 makes (the run lock) go through this, so the other
        processes stop with it instead of waiting forever in their next collective."""
        failed = self.sum([float(error is not None)])[0] if self.distributed else 0.0
        if error is not None:
            raise error
        if failed:
            raise ValueError(
                f"process {self.rank} stops: another process of this run could not start "
                "(its message is above)"
            )


def wrap_model(model: nn.Module, strategy: str, cluster: Cluster, device: torch.device):
    """The module to call in training: the model itself, DDP around it, or the model
    sharded in place by fully_shard (each block a unit, then the whole)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not known; choose one of {STRATEGIES}")
    if not cluster.distributed:
        return model
    if strategy == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)
    from torch.distributed.fsdp import fully_shard

    for module in model.modules():
        if hasattr(module, "blocks") and isinstance(module.blocks, nn.ModuleList):
            for block in module.blocks:
                fully_shard(block)
    fully_shard(model)
    return model
