"""Benchmark: one training step (forward, backward, AdamW step) of glassformer's DecoderLM
against Hugging Face GPT2LMHeadModel and a GPT built from torch.nn.TransformerEncoder layers.

Shapes (float32, random token data, labels = inputs shifted inside each model):

    tiny        4 layers, d_model 128, 4 heads, context 64, batch 12, vocabulary 65
    gpt2-small  12 layers, d_model 768, 12 heads, context 256, batch 4, vocabulary 50257

Peers, built from the same shape, all trained with glassformer's ``build_optimizer`` (AdamW,
fused=True, weight decay on matrices only; the same settings for everyone), no dropout:

    glassformer  DecoderLM, GPT-2 layout: pre-norm, gelu_tanh, learned positions, tied head
    hf           transformers.GPT2LMHeadModel, attn_implementation="sdpa", use_cache=False
    torch.nn     token + position embedding, nn.TransformerEncoder (norm_first=True, tanh
                 GELU as a callable, batch_first) called with the causal mask and
                 is_causal=True, final LayerNorm,
                 head tied to the embedding, F.cross_entropy against the labels shifted

Memory reuse: glassformer's trainer calls ``glassformer.training.memory.reuse_freed_memory()``
on CPU (glibc's malloc keeps freed memory instead of mapping large blocks afresh every step),
so the glassformer cases run with it (``--no-reuse-memory`` to leave it out). The peers run as
they ship, and again with the same call ("+ reuse" rows), so the table shows both the speed a
user gets and how much of it is the model code.

Each (peer, shape) runs in its own subprocess (train_case.py; peak RSS per case: processes.py).
Then a paired run keeps every case of the shape waiting in a process of its own and asks each in
turn for a short block of steps (paired.py, ``--paired-seconds``): its ratios compare steps
taken in the same spell of a noisy machine. All its models are in memory at once (GPT-2 small:
about 3.5 GB a case). A step's forward + backward and its optimizer step are timed separately
inside the same step (CPU: nothing is asynchronous), so "fwd+bwd" is the step without AdamW.
Scaling: the tiny GPT at context 64..1024 (batch 12) and batch 1..64 (context 64), glassformer
vs Hugging Face. Optional glassformer variants: --compile (torch.compile), --bf16 (bfloat16
autocast; MFU against the bfloat16 matmul peak), --checkpointing (activation checkpointing, when
the model offers it). --profile N prints the N costliest ops of each peer's step
(torch.profiler). --nanogpt PATH runs instead only glassformer, nanoGPT (PATH/model.py) and
Hugging Face alternating in one process (train_nanogpt.py).

    .venv/bin/python -m benchmarks.bench_train            # about 5 minutes on 2 cores
    .venv/bin/python -m benchmarks.bench_train --quick    # tiny shape, one sweep point

Prints tables with ratios glassformer / peer and writes bench-results/train.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_train.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired, train_nanogpt
from benchmarks.common import (
    Shape,
    add_common_args,
    best_of_rounds,
    environment,
    fastest,
    finish_args,
    print_header,
    write_json,
)
from benchmarks.nanogpt import load_nanogpt
from benchmarks.paired import MATMUL
from benchmarks.peak import MATMUL_N, best_peak, matmul_peak
from benchmarks.peers import PEERS, SHAPES
from benchmarks.processes import execute
from benchmarks.train_report import flops_per_token, report

OUT = "bench-results/train.json"
PARTS = ("results", "reuse", "variants")  # the peers; the peers + reuse; glassformer variants
CONTEXTS = (64, 128, 256, 512, 1024)
BATCHES = (1, 4, 16, 64)


# Driver ---------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, SHAPES, PEERS, OUT)
    ap.set_defaults(out=None)  # train.json, or train_nanogpt.py's file with --nanogpt
    ap.add_argument("--contexts", default=None, help="context sweep (tiny GPT, batch 12)")
    ap.add_argument("--batches", default=None, help="batch sweep (tiny GPT, context 64)")
    ap.add_argument("--compile", action="store_true", help="also glassformer + torch.compile")
    ap.add_argument("--bf16", action="store_true", help="also glassformer + bfloat16 autocast")
    ap.add_argument("--checkpointing", action="store_true", help="also glassformer + act. ckpt")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print top-N ops/case")
    ap.add_argument(
        "--no-reuse-memory",
        dest="reuse_memory",
        action="store_false",
        help="run glassformer without reuse_freed_memory() (its trainer calls it on CPU)",
    )
    ap.add_argument(
        "--no-peer-reuse", dest="peer_reuse", action="store_false",
        help="skip the peer rows with reuse_freed_memory() too",
    )  # fmt: skip
    ap.add_argument(
        "--paired-rounds", type=int, default=None, metavar="N",
        help="paired rounds at least, also past --paired-seconds (default 5, --quick 2)",
    )  # fmt: skip
    ap.add_argument(
        "--nanogpt", default=None, metavar="PATH",
        help="a nanoGPT checkout: only time its model.py's GPT, glassformer and HF GPT-2, "
        "alternating in this process (train_nanogpt.py)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    finish_args(ap, args, SHAPES, PEERS)
    if args.paired_rounds is None:
        args.paired_rounds = 2 if args.quick else 5
    if args.paired_rounds < 1:
        ap.error(f"--paired-rounds {args.paired_rounds}: need at least 1")
    if args.nanogpt is not None:
        try:
            load_nanogpt(args.nanogpt)
        except ValueError as e:
            ap.error(f"--nanogpt {e}")
    args.out = args.out or (train_nanogpt.OUT if args.nanogpt else OUT)
    args.context_list = _ints(args.contexts, (64,) if args.quick else CONTEXTS)
    args.batch_list = _ints(args.batches, (4,) if args.quick else BATCHES)
    args.dtypes = ["float32"] + (["bfloat16"] if args.bf16 else [])
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.nanogpt:
        return train_nanogpt.main(args)
    env = environment(args.threads)
    before = {d: matmul_peak(repeat=args.repeat, dtype=d) for d in args.dtypes}
    print_header(env, before)

    variants = _variants(args)
    shapes: dict[str, Any] = {}
    for name in args.names:
        shape = SHAPES[name]
        cases = {("results", p): (p, {}) for p in args.peer_list}
        if args.peer_reuse and args.reuse_memory:
            cases |= {
                ("reuse", p): (p, {"reuse_memory": True})
                for p in args.peer_list
                if p != "glassformer"
            }
        cases |= {("variants", v): ("glassformer", o) for v, o in variants.items()}
        got = best_of_rounds(
            lambda key, shape=shape, cases=cases: run(cases[key][0], shape, args, **cases[key][1]),
            list(cases),
            args.rounds,
            lambda results: fastest(results, "step"),
        )
        shapes[name] = {
            "shape": dataclasses.asdict(shape),
            "flop_per_token": flops_per_token(shape),
            **{part: {k: r for (g, k), r in got.items() if g == part} for part in PARTS},
        }
        if args.paired_seconds > 0 and len(args.peer_list) > 1:
            shapes[name]["paired"] = run_paired(shape, args)
    scaling = sweeps(args, shapes)

    after = {d: matmul_peak(repeat=args.repeat, dtype=d) for d in args.dtypes}
    peak = {d: best_peak(before[d], after[d]) for d in args.dtypes}
    print(f"matmul peak after the cases: {after['float32']['gflops']:.1f} GFLOP/s\n")
    report(shapes, scaling, {d: p["gflops"] for d, p in peak.items()}, variants)
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "train",
        "environment": env,
        "matmul_peak": peak,
        "budget": dataclasses.asdict(args.budget),
        "rounds": args.rounds,
        "peers": {p: PEERS[p] for p in args.peer_list},
        "shapes": shapes,
        "scaling": scaling,
        "checkpointing": bool(args.checkpointing),
        "glassformer_reuse_memory": bool(args.reuse_memory),
    }
    out = write_json(args.out, data)
    print(f"wrote {out}")
    cases = [
        r
        for s in shapes.values()
        for r in (*s["results"].values(), *s["reuse"].values(), *s["variants"].values())
    ]
    cases += [row[p] for rows in scaling.values() for row in rows for p in PEERS if p in row]
    cases += [s["paired"] for s in shapes.values() if "paired" in s]
    failed = sum("error" in r for r in cases)
    if failed:
        raise SystemExit(f"{failed} case(s) failed")
    return data


def run(peer: str, shape: Shape, args, **variant: Any) -> dict[str, Any]:
    """One case, in its own process unless --in-process; prints a progress line."""
    spec = {
        "peer": peer,
        "shape": dataclasses.asdict(shape),
        "threads": args.threads,
        "seed": 0,
        "budget": dataclasses.asdict(args.budget),
        "profile": args.profile,
        "reuse_memory": peer == "glassformer" and args.reuse_memory,
        **variant,
    }
    t0 = time.perf_counter()
    result = execute("benchmarks.train_case", spec, not args.in_process)
    result["wall_s"] = time.perf_counter() - t0
    label = "+".join([peer, *variant])
    where = f"{shape.n_layer} layers, context {shape.context}, batch {shape.batch}"
    if "error" in result:
        print(f"  {label:22s} {where}: FAILED {result['error']}", flush=True)
        return result
    step = result["timing"]["step"]["median_ms"]
    print(f"  {label:22s} {where}: {step:9.1f} ms/step ({result['wall_s']:.0f} s)", flush=True)
    if args.profile:
        print(f"PROFILE {label}, {shape.describe()}\n{result['profile']}")
    return result


def run_paired(shape: Shape, args) -> dict[str, Any]:
    """The paired run of one shape (paired.py): glassformer, each peer as it ships and, unless
    --no-peer-reuse, with reuse_freed_memory(), and the matmul, each in a process of its own
    (in this one with --in-process), their blocks interleaved. Prints a progress line."""
    base = {"shape": dataclasses.asdict(shape), "threads": args.threads, "seed": 0}
    specs = {"glassformer": {"peer": "glassformer", "reuse_memory": args.reuse_memory}}
    for peer in args.peer_list:
        if peer != "glassformer":
            specs[peer] = {"peer": peer}
            if args.peer_reuse and args.reuse_memory:
                specs[f"{peer}+reuse"] = {"peer": peer, "reuse_memory": True}
    specs[MATMUL] = {"matmul": True}
    t0 = time.perf_counter()
    specs = {name: {**base, **spec} for name, spec in specs.items()}
    result = paired.run(
        "benchmarks.train_case", specs, args.paired_seconds,
        min_blocks=args.paired_rounds, in_process=args.in_process,
    )  # fmt: skip
    done = (
        "FAILED " + result["error"]
        if "error" in result
        else f"{len(result['blocks'][MATMUL]['step'])} rounds"
    )
    print(f"  paired, interleaved: {done} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return {**result, "matmul_flop": 2 * MATMUL_N**3, "reuse_memory": args.reuse_memory}


def sweeps(args, shapes: dict[str, Any]) -> dict[str, list]:
    """The tiny GPT at each context (batch 12) and each batch size (context 64), raw results."""
    base = SHAPES["tiny"]
    out: dict[str, list] = {"context": [], "batch": []}
    pair = [p for p in ("glassformer", "hf") if p in args.peer_list]
    for axis, values in (("context", args.context_list), ("batch", args.batch_list)):
        for value in values:
            shape = base.replace(**{axis: value})
            row: dict[str, Any] = {"context": shape.context, "batch": shape.batch}
            if shape == base and "tiny" in shapes:  # measured already
                row |= {p: shapes["tiny"]["results"][p] for p in pair}
            else:
                row |= best_of_rounds(
                    lambda p, shape=shape: run(p, shape, args),
                    pair,
                    args.rounds,
                    lambda results: fastest(results, "step"),
                )
            out[axis].append(row)
    return out


def _ints(text: str | None, default: tuple[int, ...]) -> list[int]:
    return list(default) if text is None else [int(x) for x in text.split(",") if x]


def _variants(args) -> dict[str, dict[str, bool]]:
    out = {}
    if args.compile:
        out["glassformer+compile"] = {"compile": True}
    if args.bf16:
        out["glassformer+bf16"] = {"bf16": True}
    if args.checkpointing:
        out["glassformer+checkpointing"] = {"checkpointing": True}
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
