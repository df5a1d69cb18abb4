"""``bench_train --nanogpt PATH``: glassformer, nanoGPT and Hugging Face GPT-2 trained side by
side in one process, the three alternating.

For each shape the three models (peers.py, nanogpt.py: the same weights in the same shapes,
no dropout) and a 2048³ matmul are built in this process and warmed up; then each in turn
runs a block of steps lasting about a quarter of a second (paired.interleave, the order
reversed every other round), for ``--paired-seconds`` and at least ``--paired-rounds``
rounds. A step is zero_grad, forward with the model's own loss, backward and an AdamW step
(glassformer's ``build_optimizer``: fused, the same settings for all three).
``reuse_freed_memory()`` is called before the first model is built unless
``--no-reuse-memory``; it acts on the whole process, so the three share the allocator
setting either way. Per model: ms per step (median over rounds of a block's mean step), MFU
against the matmul of the same round, and speed = model ms / glassformer ms, the median
(min-max) over rounds of the per-round ratio.

    python -m benchmarks.bench_train --nanogpt ~/nanoGPT --shapes tiny,gpt2-small \\
        --paired-rounds 30 --paired-seconds 0
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from typing import Any

import torch

from benchmarks import nanogpt, paired
from benchmarks.common import (
    Shape,
    environment,
    percent,
    print_header,
    print_table,
    ratio,
    write_json,
)
from benchmarks.peak import MATMUL_N
from benchmarks.peers import BUILDERS, PEERS, SHAPES
from benchmarks.processes import peak_rss_mb
from benchmarks.train_report import flops_per_token, paired_figures

MODELS = ("glassformer", "nanogpt", "hf")
LABELS = {**PEERS, "nanogpt": nanogpt.LABEL}
OUT = "bench-results/train_nanogpt.json"


def main(args) -> dict[str, Any]:
    """Every shape of ``args.names``: run, print its table; write the JSON to ``args.out``."""
    env = environment(args.threads)
    print_header(env, {})
    shapes = {name: run_shape(SHAPES[name], args) for name in args.names}
    env["load_average_after"] = list(os.getloadavg())
    file = nanogpt.model_file(args.nanogpt)
    data = {
        "benchmark": "train_nanogpt",
        "environment": env,
        "nanogpt": {"model_py": str(file), "sha256": hashlib.sha256(file.read_bytes()).hexdigest()},
        "reuse_memory": bool(args.reuse_memory),
        "shapes": shapes,
    }
    out = write_json(args.out, data)
    print(f"wrote {out}")
    failed = sum("error" in s["paired"] for s in shapes.values())
    if failed:
        raise SystemExit(f"{failed} shape(s) failed")
    return data


def run_shape(shape: Shape, args) -> dict[str, Any]:
    """The paired run of one shape, its figures, and its table printed."""
    base = {
        "shape": dataclasses.asdict(shape),
        "threads": args.threads,
        "seed": 0,
        "warmup": args.budget.warmup,
        "reuse_memory": args.reuse_memory,
    }
    specs = {m: {**base, "peer": m} for m in MODELS}
    specs["nanogpt"]["nanogpt"] = str(args.nanogpt)
    specs[paired.MATMUL] = {**base, "matmul": True}
    t0 = time.perf_counter()
    run = paired.run(
        "benchmarks.train_case", specs, args.paired_seconds,
        min_blocks=args.paired_rounds, in_process=True,
    )  # fmt: skip
    run |= {"matmul_flop": 2 * MATMUL_N**3, "reuse_memory": bool(args.reuse_memory)}
    result = {
        "shape": dataclasses.asdict(shape),
        "flop_per_token": flops_per_token(shape),
        "n_params": {m: n_params(m, shape, args.nanogpt) for m in MODELS},
        "paired": run,
        "peak_rss_mb": peak_rss_mb(),  # this process's high-water mark so far
    }
    wall = time.perf_counter() - t0
    if "error" in run:
        print(f"  {shape.describe()}: FAILED {run['error']} ({wall:.0f} s)", flush=True)
        return result
    run["figures"] = paired_figures(run, result["flop_per_token"], shape)
    print_run(shape, result, wall)
    return result


def n_params(model: str, shape: Shape, path) -> int:
    """The model's parameter count (tied weights once), built without memory."""
    with torch.device("meta"):
        if model == "nanogpt":
            m, _ = nanogpt.build_nanogpt(shape, path)
        else:
            m, _ = BUILDERS[model](shape)
    return sum(p.numel() for p in m.parameters())


def print_run(shape: Shape, result: dict[str, Any], wall: float) -> None:
    run = result["paired"]
    fig = run["figures"]

    def spread(r, fmt):
        return f"{fmt(r['median'])} ({fmt(r['min'])}-{fmt(r['max'])})"

    rows = []
    for m in MODELS:
        f = fig[m]
        rows.append(
            [
                LABELS[m],
                f"{result['n_params'][m]:,}",
                f"{f['step_ms']:.1f}",
                spread(f["mfu_step"], percent),
                f"{f['fwd_bwd_ms']:.1f}",
                spread(f["speed"], ratio) if "speed" in f else "-",
                f"{f['faults_per_step']:.0f}",
            ]
        )
    reuse = "reuse_freed_memory() for all" if run["reuse_memory"] else "no reuse_freed_memory()"
    n = len(run["blocks"][paired.MATMUL]["step"])
    print_table(
        f"ONE PROCESS {shape.describe()}: {n} rounds, the models alternating, {reuse}; "
        f"matmul peak {fig['peak_gflops']:.1f} GFLOP/s (median over rounds); "
        f"peak RSS {result['peak_rss_mb']:.0f} MB; {wall:.0f} s",
        ["model", "params", "step ms", "MFU", "f+b ms", "speed", "faults/step"],
        rows,
        [
            "step: forward with the model's own loss, backward, fused AdamW; f+b: without "
            "AdamW; ms: median over rounds of the mean step in a block "
            f"(steps per block: {run['steps_per_block']})",
            "speed: model ms / glassformer ms in the same round (> 1: glassformer faster), "
            "median (min-max) over rounds; MFU: against the matmul of the same round",
            "nanoGPT: its model.py as it ships (erf GELU; the others tanh); "
            "faults/step: minor page faults per step, median over rounds",
        ],
    )
