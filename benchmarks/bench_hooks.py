"""Benchmark: the cost of looking inside. ``model.run_with_cache`` against a plain forward pass
of the same DecoderLM on the same batch (eval mode, torch.no_grad(), float32, random weights
and tokens), in one process.

    gpt2-small  12 layers, d_model 768, 12 heads, vocabulary 50257, batch 4 x context 256
    tiny        2 layers, d_model 64, 4 heads, vocabulary 256, batch 2 x context 32 (--quick)

Cases (``--cases``, each against "plain"):

    plain       model(ids)
    all         run_with_cache(ids): every hook point cached, so attention runs its
                written-out path (scores, mask, softmax A, A V) and every head's term
                z_h W^O_h is computed (hook_result)
    no-result   every hook point but hook_result
    stream      the residual stream only (hook_resid_*): the fused kernel still runs

Paired rounds (benchmarks/paired.py, run here in one process): each round times one block of
every case (as many passes as last about 0.25 s, at least one; the order reversed every other
round), and a case's ratio to "plain" is the median over rounds of the ratio of its per-pass
time to plain's in the same round, with the min and max over rounds as the spread. A slow
spell of the machine lengthens both terms of a round's ratio and cancels. The cache's size is
the memory its tensors hold (views counted once).

    .venv/bin/python -m benchmarks.bench_hooks                  # GPT-2 small: a few minutes
    .venv/bin/python -m benchmarks.bench_hooks --quick          # tiny shape: seconds

Prints a table and writes bench-results/hooks.json. The issue's goal: "all" within 1.5x of
"plain" at GPT-2 small.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_hooks.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import Shape, environment, print_table, ratio, write_json
from glassformer import DecoderLM, ModelConfig
from glassformer.training.memory import reuse_freed_memory

SHAPES = {
    "gpt2-small": Shape(n_layer=12, n_head=12, d_model=768, context=256, batch=4, vocab=50257),
    "tiny": Shape(n_layer=2, n_head=4, d_model=64, context=32, batch=2, vocab=256),
}
CASES: dict[str, Callable[[str], bool] | None] = {
    "plain": None,
    "all": lambda name: True,
    "no-result": lambda name: not name.endswith(".hook_result"),
    "stream": lambda name: ".hook_resid_" in name,
}


def build(shape: Shape) -> tuple[DecoderLM, torch.Tensor]:
    """A GPT-2 layout DecoderLM of ``shape`` (random weights) and a batch of random ids."""
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=shape.vocab,
        max_len=max(1024, shape.context),
        d_model=shape.d_model,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        activation="gelu_tanh",
    )
    ids = torch.randint(0, shape.vocab, (shape.batch, shape.context))
    return DecoderLM(config).eval(), ids


def make_step(model: DecoderLM, ids: torch.Tensor, case: str) -> Callable[[], None]:
    names = CASES[case]

    @torch.no_grad()
    def step() -> None:
        if names is None:
            model(ids)
        else:
            model.run_with_cache(ids, names=names)

    return step


def cache_mb(model: DecoderLM, ids: torch.Tensor, case: str) -> float:
    """MB held by the tensors a case's cache keeps (a storage shared by views counted once)."""
    if CASES[case] is None:
        return 0.0
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, names=CASES[case])
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in cache.values()}
    return sum(s.nbytes() for s in storages.values()) / 2**20


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the tiny shape, a few rounds")
    ap.add_argument("--shape", choices=list(SHAPES), default=None, help="default gpt2-small")
    ap.add_argument("--cases", default="plain,all,no-result,stream", help=",".join(CASES))
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--seconds", type=float, default=None, help="paired rounds for at least S s")
    ap.add_argument("--rounds", type=int, default=None, help="at least N rounds (default 7)")
    ap.add_argument("--reuse", action="store_true", help="reuse_freed_memory() first")
    ap.add_argument("--out", default="bench-results/hooks.json")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if "plain" not in cases or any(c not in CASES for c in cases):
        ap.error(f"--cases {args.cases}: choose from {list(CASES)}, plain among them")
    shape_name = args.shape or ("tiny" if args.quick else "gpt2-small")
    seconds = args.seconds if args.seconds is not None else (0.5 if args.quick else 60.0)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 7)
    if rounds < 1:
        ap.error(f"--rounds {rounds}: need at least 1")
    torch.set_num_threads(args.threads)
    reused = reuse_freed_memory() if args.reuse else False
    env = environment(args.threads)
    shape = SHAPES[shape_name]
    load = env["load_average"][0]
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}, load average {load:.2f}")
    print(f"{shape_name}: {shape.describe()}", flush=True)
    model, ids = build(shape)
    sizes = {c: cache_mb(model, ids, c) for c in cases}
    t0 = time.perf_counter()
    runners = {c: paired.LocalRunner(make_step(model, ids, c)) for c in cases}
    result = paired.interleave(runners, seconds, min_blocks=rounds)
    blocks = {c: b["step"] for c, b in result["blocks"].items()}  # ms per pass, one a round
    figures = {
        c: {
            "ms": statistics.median(blocks[c]),
            "cache_mb": sizes[c],
            "vs_plain": None if c == "plain" else paired.per_block(blocks[c], blocks["plain"]),
        }
        for c in cases
    }
    n_rounds = len(blocks["plain"])
    rows = [
        [
            c,
            f"{f['ms']:.1f}",
            f"{f['cache_mb']:.1f}",
            "-" if c == "plain" else ratio(f["vs_plain"]["median"]),
            "-" if c == "plain" else f"{f['vs_plain']['min']:.2f}-{f['vs_plain']['max']:.2f}",
        ]
        for c, f in figures.items()
    ]
    print_table(
        f"run_with_cache vs a plain forward pass, {shape_name} ({n_rounds} paired rounds, "
        f"{time.perf_counter() - t0:.0f} s)",
        ["case", "ms/pass", "cache MB", "vs plain", "rounds"],
        rows,
        ["ms/pass: median over rounds; vs plain: median of the rounds' ratios (min-max)"],
    )
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "hooks",
        "environment": env,
        "shape": {"name": shape_name, **dataclasses.asdict(shape)},
        "reuse_memory": reused,
        "steps_per_block": result["steps_per_block"],
        "blocks_ms": blocks,
        "figures": figures,
    }
    print(f"wrote {write_json(args.out, data)}")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
