"""Benchmark: attention against recurrence. One self-attention layer of glassformer against
PyTorch's own torch.nn.LSTM and torch.nn.GRU of the same width, forward + backward, as the
sequence grows; and one merged in-projection for all heads against one projection per head.

"What Happens in A Transformer Layer": transformers "avoid the recurrence structure, which
inherently precludes parallelization"; "Transformer: Self-Attention and Parallelization",
Multi-Head Attention: the heads' fully connected layers "can be merged into a large fully
connected layer ... In this way, the parallelism will be better". The layers and the
projections are in recurrence_case.py; defaults: d_model 256, 8 heads (head size 32), batch 8,
float32, random weights and inputs.

    layers       attention (glassformer.nn.MultiHeadAttention, causal), torch-mha
                 (torch.nn.MultiheadAttention, causal: the attention peer), lstm, gru, at
                 T = 64, 128, ..., 4096 (``--sizes``)
    projections  merged (one Linear(C, 3C)) and per-head (8 Linears(C, 3C/8)), at T = 64 and
                 1024 (``--projection-sizes``)

A step is the forward pass and the backward pass of a fixed random output gradient to the
input and the weights. Paired rounds (paired.py, in this process, as bench_hooks): at each T
every case is built, warmed up, and timed in blocks of steps lasting about 0.25 s (at least
one), one block of each case a round, the order reversed every other round, for at least
``--rounds`` rounds and ``--seconds`` seconds. A case's time is the median over rounds; a
ratio (torch.nn's attention, LSTM, GRU over attention; per-head / merged) is the median over
rounds of the ratio of the two blocks of a round, with its min-max. Beside the times, for each
layer: its parameters, the steps that must run one after another (T for a recurrence, 1 for
either attention), the maximum path length between two positions (T - 1 and 1), and its
forward multiply-adds per token (recurrence_case.py says how each is counted).

    .venv/bin/python -m benchmarks.bench_recurrence            # about 2 minutes on 2 cores
    .venv/bin/python -m benchmarks.bench_recurrence --quick    # T 64 and 128: seconds

Prints the tables and writes bench-results/recurrence.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_recurrence.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks import recurrence_case as case
from benchmarks.common import environment, print_table, ratio, without_out, write_json

SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
PROJECTION_SIZES = (64, 1024)
D_MODEL, N_HEAD, BATCH = 256, 8, 8
BLOCK_S = 0.25  # seconds a block of steps lasts, about (at least one step)
REFERENCE = {"layers": "attention", "projections": "merged"}  # each ratio: case / this


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T 64 and 128, a few rounds")
    ap.add_argument("--sizes", default=None, help="comma-separated T of the layers")
    ap.add_argument("--projection-sizes", default=None, help="comma-separated T (64,1024)")
    ap.add_argument("--d-model", type=int, default=D_MODEL, help=f"width C ({D_MODEL})")
    ap.add_argument("--heads", type=int, default=N_HEAD, help=f"attention heads ({N_HEAD})")
    ap.add_argument("--batch", type=int, default=BATCH, help=f"sequences a step ({BATCH})")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--rounds", type=int, default=None, help="at least N rounds a T (5)")
    ap.add_argument("--seconds", type=float, default=None, help="at least S s a T (2)")
    ap.add_argument("--out", default="bench-results/recurrence.json")
    args = ap.parse_args(argv)

    def sizes(text: str | None, default: tuple[int, ...], option: str) -> list[int]:
        try:
            got = sorted({int(s) for s in text.split(",") if s}) if text is not None else default
        except ValueError:
            ap.error(f"{option} {text}: comma-separated positive integers")
        if any(t < 2 for t in got):
            ap.error(f"{option} {text}: every T must be at least 2 (two positions)")
        return list(got)

    args.size_list = sizes(args.sizes, (64, 128) if args.quick else SIZES, "--sizes")
    args.projection_list = sizes(
        args.projection_sizes, (64,) if args.quick else PROJECTION_SIZES, "--projection-sizes"
    )
    if min(args.d_model, args.heads, args.batch, args.threads) < 1 or args.d_model % args.heads:
        ap.error(
            f"--d-model {args.d_model}, --heads {args.heads}, --batch {args.batch}, --threads "
            f"{args.threads}: positive, and d_model divisible by heads"
        )
    args.rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    args.seconds = args.seconds if args.seconds is not None else (0.2 if args.quick else 2.0)
    if args.rounds < 1 or args.seconds < 0:
        ap.error(f"--rounds {args.rounds}, --seconds {args.seconds}: need 1 round, 0 s at least")
    return args


def run_size(kind: str, names: tuple[str, ...], t: int, args) -> dict[str, Any]:
    """Every case of ``names`` at T = t, their blocks interleaved; the figures of each."""
    tokens = args.batch * t
    runners = {}
    for name in names:
        torch.manual_seed(0)
        module, forward = case.build_layer(name, args.d_model, args.heads)
        x = case.make_input(args.batch, t, args.d_model)
        runners[name] = paired.LocalRunner(case.make_step(module, forward, x), warmup=1)
    t0 = time.perf_counter()
    result = paired.interleave(runners, args.seconds, min_blocks=args.rounds, block_s=BLOCK_S)
    blocks, ref = result["blocks"], REFERENCE[kind]
    cases = {}
    for name in names:
        ms = statistics.median(blocks[name]["step"])
        cases[name] = {
            "ms": ms,
            "forward_ms": statistics.median(blocks[name]["forward"]),
            "us_per_token": 1000 * ms / tokens,
            "blocks_ms": blocks[name]["step"],
            f"vs_{ref}": None if name == ref else paired.per_block(
                blocks[name]["step"], blocks[ref]["step"]
            ),
        }  # fmt: skip
        if kind == "layers":
            cases[name] |= {
                "sequential_steps": case.sequential_steps(name, t),
                "max_path_length": case.max_path_length(name, t),
                "macs_per_token": case.macs_per_token(name, args.d_model, t),
            }
    rounds = len(blocks[ref]["step"])
    took = time.perf_counter() - t0
    print(f"  {kind} T={t}: " + ", ".join(f"{n} {c['ms']:.1f} ms" for n, c in cases.items())
          + f" ({rounds} rounds, {took:.0f} s)", flush=True)  # fmt: skip
    per = result["steps_per_block"]
    return {"t": t, "tokens": tokens, "rounds": rounds, "steps_per_block": per, "cases": cases}


def describe(args) -> dict[str, Any]:
    """Each layer's and projection's module, its parameters and (projections) its matmuls."""
    c, h = args.d_model, args.heads
    what = {
        "attention": f"glassformer.nn.MultiHeadAttention({c}, {h})",
        "torch-mha": f"torch.nn.MultiheadAttention({c}, {h}, batch_first=True)",
        "lstm": f"torch.nn.LSTM({c}, {c}, batch_first=True)",
        "gru": f"torch.nn.GRU({c}, {c}, batch_first=True)",
        "merged": f"one Linear({c}, {3 * c}): [W^Q; W^K; W^V] of all {h} heads",
        "per-head": f"{h} Linear({c}, {3 * c // h}): one per head",
    }
    out = {}
    for name, module in what.items():
        built, _ = case.build_layer(name, c, h)
        out[name] = {"module": module, "params": case.n_params(built)}
        if name in case.PROJECTIONS:
            out[name]["matmuls"] = 1 if name == "merged" else h
    for name in ("attention", "torch-mha"):  # the output at t sees the inputs <= t, as the RNNs'
        out[name]["mask"] = "causal"
    return out


def print_tables(data: dict[str, Any]) -> None:
    st, parts = data["settings"], data["parts"]
    rows = []
    for row in data["rows"]:
        for name, c in row["cases"].items():
            vs = c["vs_attention"]
            rows.append([
                f"T {row['t']}", name, f"{c['ms']:.1f}", f"{c['us_per_token']:.2f}",
                str(c["sequential_steps"]), str(c["max_path_length"]),
                f"{c['macs_per_token']:,}",
                "-" if vs is None else f"{ratio(vs['median'])} ({vs['min']:.2f}-{vs['max']:.2f})",
            ])  # fmt: skip
    params = ", ".join(f"{n} {parts[n]['params']:,}" for n in case.LAYERS)
    print_table(
        f"forward + backward, d_model {st['d_model']}, {st['n_head']} heads, batch {st['batch']}",
        ["T", "layer", "ms", "us/token", "seq. steps", "max path", "MAC/token", "vs attention"],
        rows,
        [f"parameters: {params}",
         "ms: median over rounds; vs attention: the layer's time / attention's in the same "
         "round, median (min-max) over rounds (above 1: attention faster)"],
    )  # fmt: skip
    rows = []
    for row in data["projection_rows"]:
        for name, c in row["cases"].items():
            vs = c["vs_merged"]
            rows.append([
                f"T {row['t']}", name, str(parts[name]["matmuls"]), f"{c['ms']:.2f}",
                "-" if vs is None else f"{ratio(vs['median'])} ({vs['min']:.2f}-{vs['max']:.2f})",
            ])  # fmt: skip
    print_table(
        "the in-projection of every head, forward + backward",
        ["T", "projection", "matmuls", "ms", "vs merged"],
        rows,
        [f"parameters: merged {parts['merged']['params']:,}, per-head "
         f"{parts['per-head']['params']:,}; vs merged: per-head time / merged time, paired"],
    )  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    env = environment(args.threads)
    load = env["load_average"][0]
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}, load average {load:.2f}")
    if load > (env["cpus"] or 1) - args.threads + 0.5:
        print(f"warning: load average {load:.1f} on {env['cpus']} CPUs: timings will be distorted")
    rows = [run_size("layers", case.LAYERS, t, args) for t in args.size_list]
    proj = [run_size("projections", case.PROJECTIONS, t, args) for t in args.projection_list]
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "recurrence",
        "argv": without_out(argv),
        "environment": env,
        "settings": {
            "d_model": args.d_model,
            "n_head": args.heads,
            "batch": args.batch,
            "dtype": "float32",
            "sizes": args.size_list,
            "projection_sizes": args.projection_list,
            "rounds": args.rounds,
            "seconds": args.seconds,
        },
        "parts": describe(args),
        "rows": rows,
        "projection_rows": proj,
    }
    print_tables(data)
    print(f"wrote {write_json(args.out, data)}")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
