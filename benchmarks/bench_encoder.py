"""Benchmark: encoder inference (eval mode, torch.no_grad()) of glassformer's EncoderModel
against torch.nn.TransformerEncoder's fast path and Hugging Face BertModel.

Shapes (float32, random token data), all in BERT's layout (post-norm, gelu, embedding norm,
token-type embedding, pooler, no dropout):

    tiny        4 layers, d_model 128, 4 heads, context 64, batch 16, vocabulary 1000
    bert-base   12 layers, d_model 768, 12 heads, context 128, batch 8, vocabulary 30522

Peers, built from the same shape:

    glassformer  EncoderModel (attention_mask: 1 = real token)
    torch.nn     embeddings + nn.TransformerEncoder (batch_first, enable_nested_tensor=True)
                 + pooler: in eval without grad it takes the fused fast path, and with a
                 src_key_padding_mask it packs the real tokens into nested tensors
    hf           transformers.BertModel, attn_implementation="sdpa"

Each peer runs twice on the same batch: "dense" (no padding, no mask) and "padded" (row
lengths drawn in [T/4, T], the first row full, and a padding mask). tokens/s and MFU count
the real tokens only; FLOPs per token are glassformer's formula (forward = training / 3) for
every peer. Each (peer, shape) runs in its own subprocess (peak RSS per case; see processes.py).
Then a paired run keeps every (peer, input) waiting in a process of its own and asks each in
turn for a short block of forward passes (paired.py, ``--paired-seconds``), so that its
ratios compare passes timed in the same spell of a noisy machine. With ``--reuse`` the paired
run also times every peer, glassformer included, with ``reuse_freed_memory()`` called in its
process ("+ reuse" cases; glibc then keeps and reuses freed memory instead of returning it
and faulting it in again), so that the allocator's share of a ratio can be told from the
model code's.
"kernels" records whether the fused paths ran (from one profiled forward): "sdpa"
(scaled_dot_product_attention), "fast" (torch.nn's fused encoder layer), "nested" (padding
packed away).

    .venv/bin/python -m benchmarks.bench_encoder            # about 2 minutes on 2 cores
    .venv/bin/python -m benchmarks.bench_encoder --quick    # tiny shape only: seconds
    .venv/bin/python -m benchmarks.bench_encoder --shapes tiny --rounds 1 --reuse

Prints a table with ratios glassformer / peer and writes bench-results/encoder.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_encoder.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import (
    Budget,
    Shape,
    add_common_args,
    best_of_rounds,
    environment,
    fastest,
    finish_args,
    measure,
    print_header,
    write_json,
)
from benchmarks.encoder_peers import BUILDERS, INPUTS, KERNELS, PEERS, SHAPES, make_batch
from benchmarks.encoder_report import compare, derive, flops_per_token, print_paired, print_shape
from benchmarks.peak import best_peak, matmul_peak
from benchmarks.processes import execute, preload_torch, prepare_process, rss_mb


# One case (runs in a subprocess) --------------------------------------------------------------
def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["peer"] == "hf":
        import transformers.models.bert.modeling_bert  # noqa: F401  (counted in the baseline)
    preload_torch()
    base = rss_mb()
    shape = Shape(**spec["shape"])
    model, forward = BUILDERS[spec["peer"]](shape)
    model.eval()
    ids, mask = make_batch(shape, spec.get("seed", 0))
    out: dict[str, Any] = {"rss_after_import_mb": base}
    for name in spec["inputs"]:
        m = mask if name == "padded" else None

        def step(m=m) -> dict[str, float]:
            t0 = time.perf_counter()
            with torch.no_grad():
                forward(ids, m)
            return {"forward": time.perf_counter() - t0}

        out[name] = measure(step, Budget(**spec["budget"]))
        out[name]["real_tokens"] = int(mask.sum()) if name == "padded" else ids.numel()
        out[name]["rss_after_import_mb"] = base
    for name in spec["inputs"]:  # after the timing: the profiler's buffers stay resident
        out[name]["kernels"] = kernels_used(
            lambda n=name: forward(ids, mask if n == "padded" else None)
        )
    return out


def make_paired_step(spec: dict[str, Any]):
    """One no-grad forward of ``spec["peer"]`` on ``spec["input"]`` (dense or padded), for the
    paired run (paired.py)."""
    prepare_process(spec)
    shape = Shape(**spec["shape"])
    model, forward = BUILDERS[spec["peer"]](shape)
    model.eval()
    ids, mask = make_batch(shape, spec.get("seed", 0))
    m = mask if spec["input"] == "padded" else None

    def step() -> None:
        with torch.no_grad():
            forward(ids, m)

    return step


def kernels_used(call) -> list[str]:
    """Which of KERNELS one no-grad call runs (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    names = {e.key for e in prof.key_averages()}
    return [label for op, label in KERNELS.items() if op in names]


# Driver ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, SHAPES, PEERS, "bench-results/encoder.json")
    ap.add_argument(
        "--reuse", action="store_true",
        help="the paired run also times every peer with reuse_freed_memory() in its process",
    )  # fmt: skip
    args = ap.parse_args(argv)
    finish_args(ap, args, SHAPES, PEERS)
    torch.set_num_threads(args.threads)
    env = environment(args.threads)
    before = matmul_peak(repeat=args.repeat)
    print_header(env, {"float32": before})
    shapes: dict[str, Any] = {}
    for name in args.names:
        shapes[name] = {
            "shape": dataclasses.asdict(SHAPES[name]),
            "flop_per_token": flops_per_token(SHAPES[name]),
            "results": best_of_rounds(
                lambda p, shape=SHAPES[name]: run(p, shape, args), args.peer_list, args.rounds,
                merge_rounds,
            ),
        }  # fmt: skip
    after = matmul_peak(repeat=args.repeat)
    peak = best_peak(before, after)
    print(f"matmul peak after the cases: {after['gflops']:.1f} GFLOP/s\n")
    for name, s in shapes.items():
        for case in s["results"].values():
            derive(case, SHAPES[name], peak["gflops"])
        ours = s["results"]["glassformer"]
        s["ratios"] = {p: compare(ours, c) for p, c in s["results"].items() if p != "glassformer"}
        print_shape(name, s)
        if args.paired_seconds > 0 and len(args.peer_list) > 1:
            s["paired"] = run_paired(SHAPES[name], args)
            if "error" not in s["paired"]:
                print_paired(name, s["paired"])
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "encoder",
        "environment": env,
        "matmul_peak": {"float32": peak},
        "budget": dataclasses.asdict(args.budget),
        "rounds": args.rounds,
        "paired_reuse": bool(args.reuse),
        "peers": {p: PEERS[p] for p in args.peer_list},
        "shapes": shapes,
    }
    out = write_json(args.out, data)
    print(f"wrote {out}")
    failed = sum("error" in c for s in shapes.values() for c in s["results"].values())
    failed += sum("error" in s.get("paired", {}) for s in shapes.values())
    if failed:
        raise SystemExit(f"{failed} case(s) failed")
    return data


def merge_rounds(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One case from its rounds: for each input, the round with the fastest median."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[0]
    return {**ok[0], **{n: fastest(ok, "forward", part=n) for n in INPUTS if n in ok[0]}}


def run(peer: str, shape: Shape, args) -> dict[str, Any]:
    """One (peer, shape), both inputs, in its own process unless --in-process."""
    spec = {
        "peer": peer,
        "shape": dataclasses.asdict(shape),
        "inputs": list(INPUTS),
        "threads": args.threads,
        "seed": 0,
        "budget": dataclasses.asdict(args.budget),
    }
    t0 = time.perf_counter()
    result = execute("benchmarks.bench_encoder", spec, not args.in_process)
    where = f"{shape.n_layer} layers, context {shape.context}, batch {shape.batch}"
    if "error" in result:
        print(f"  {peer:12s} {where}: FAILED {result['error']}", flush=True)
    else:
        times = ", ".join(
            f"{n} {result[n]['timing']['forward']['median_ms']:.1f} ms" for n in INPUTS
        )
        print(f"  {peer:12s} {where}: {times} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return result


def run_paired(shape: Shape, args) -> dict[str, Any]:
    """Every (peer, input) in a process of its own (with --reuse, every peer + reuse too),
    their forward passes interleaved in blocks (paired.py); per input, each peer's speed
    against glassformer in the same rounds, and each peer + reuse's against glassformer +
    reuse."""
    common = {"shape": dataclasses.asdict(shape), "threads": args.threads, "seed": 0}
    settings = {"": False, "+reuse": True} if args.reuse else {"": False}
    specs = {
        f"{peer}{suffix}/{inputs}": {"peer": peer, "input": inputs, "reuse_memory": reuse, **common}
        for inputs in INPUTS
        for suffix, reuse in settings.items()
        for peer in args.peer_list
    }
    t0 = time.perf_counter()
    result = paired.run(
        "benchmarks.bench_encoder", specs, args.paired_seconds,
        min_blocks=2 if args.quick else 5, in_process=args.in_process,
    )  # fmt: skip
    if "error" in result:
        print(f"  paired: FAILED {result['error']}", flush=True)
        return result
    b = result["blocks"]
    figures = {}
    for name, blocks in b.items():
        case, inputs = name.split("/")
        figures[name] = {
            "ms": statistics.median(blocks["step"]),
            "faults_per_pass": statistics.median(blocks[paired.FAULTS]),
        }
        if case != "glassformer":  # against glassformer as it ships
            figures[name]["speed"] = paired.per_block(
                blocks["step"], b[f"glassformer/{inputs}"]["step"]
            )
        if case.endswith("+reuse") and case != "glassformer+reuse":  # both with reuse
            figures[name]["speed_reuse"] = paired.per_block(
                blocks["step"], b[f"glassformer+reuse/{inputs}"]["step"]
            )
    result["figures"] = figures
    rounds = len(b[next(iter(b))]["step"])
    print(f"  paired, interleaved: {rounds} rounds ({time.perf_counter() - t0:.0f} s)", flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
