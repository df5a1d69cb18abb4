"""One case of the training benchmark (bench_train.py): one peer's training step at one
shape, built in a process of its own.

    run_case          the timed case: ``measure`` of the step (warm-up, then timed steps), the
                      resident set after the imports, the first loss, the parameter count, and
                      with ``profile`` the costliest ops (torch.profiler)
    make_paired_step  the step that the paired run (paired.py) asks for blocks of: a peer's,
                      or the 2048³ matmul that measures the machine's speed at the same time
    make_step         (step, model, losses): zero_grad, forward, backward and AdamW
                      (glassformer's ``build_optimizer`` for every peer), timed as the whole
                      step and as forward + backward

Every peer trains on the same random token ids (``seed``), labels = the inputs shifted inside
each model; ``compile`` and ``bf16`` (autocast) are glassformer's optional variants.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import torch

from benchmarks.common import Budget, Shape, measure
from benchmarks.nanogpt import build_nanogpt
from benchmarks.peak import MATMUL_N, matmul_step
from benchmarks.peers import BUILDERS, build_glassformer
from benchmarks.processes import prepare_process, rss_mb

__all__ = ["make_paired_step", "make_step", "run_case"]


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["peer"] == "hf":
        import transformers.models.gpt2.modeling_gpt2  # noqa: F401  (counted in the baseline)
    prepare_process(spec)
    base = rss_mb()
    step, model, losses = make_step(spec["peer"], Shape(**spec["shape"]), spec)
    result = measure(step, Budget(**spec["budget"]))
    result.update(
        rss_after_import_mb=base,
        first_loss=float(losses[0]),
        n_params=sum(p.numel() for p in model.parameters()),
    )
    if spec.get("profile"):
        result["profile"] = profile(step, spec["profile"])
    return result


def make_paired_step(spec: dict[str, Any]):
    """The step of one peer (or of the 2048³ matmul) of the paired run, built in its own
    process (paired.ProcessRunner) or in this one (--in-process)."""
    if spec.get("matmul"):
        return matmul_step(MATMUL_N)[0]
    prepare_process(spec)
    return make_step(spec["peer"], Shape(**spec["shape"]), spec)[0]


def make_step(peer: str, shape: Shape, spec: dict[str, Any]):
    """(step, model, losses) for ``peer`` at ``shape``: step() runs zero_grad, forward,
    backward and AdamW and returns the seconds of the step and of forward + backward; the
    first step's loss is appended to ``losses``."""
    from glassformer.training.config import TrainConfig
    from glassformer.training.optim import build_optimizer

    if peer == "glassformer":
        model, loss_of = build_glassformer(shape, spec.get("checkpointing", False))
    elif peer == "nanogpt":
        model, loss_of = build_nanogpt(shape, spec["nanogpt"])
    else:
        model, loss_of = BUILDERS[peer](shape)
    model.train()
    optimizer = build_optimizer(model, TrainConfig())
    g = torch.Generator().manual_seed(spec.get("seed", 0))
    ids = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=g)
    forward = torch.compile(model) if spec.get("compile") else model
    autocast = (
        (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
        if spec.get("bf16")
        else contextlib.nullcontext
    )
    losses: list[torch.Tensor] = []

    def step() -> dict[str, float]:
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_of(forward, ids)
        loss.backward()
        t1 = time.perf_counter()
        optimizer.step()
        t2 = time.perf_counter()
        if not losses:
            losses.append(loss.detach())
        return {"step": t2 - t0, "fwd_bwd": t1 - t0}

    return step, model, losses


def profile(step, rows: int, steps: int = 3) -> str:
    """The ``rows`` ops with the most self CPU time over ``steps`` steps."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
