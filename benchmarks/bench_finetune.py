"""Benchmark: a fine-tuning step, glassformer against Hugging Face ``transformers``, full and
with LoRA, at a BERT-base classifier and a GPT-2-small language model (finetune_case.py has
the shapes, the peers and the step).

Time: every case of a shape waits in a process of its own with its model built and warmed
up, and the driver asks each in turn for a block of steps, a 2048³ matmul among them for the
machine's speed in the same round (paired.py): a ratio is the median over rounds of the ratio
of two cases' blocks. Memory: each case again in a fresh process (processes.run_isolated), its
peak resident set over 3 steps above what the imports took.

Figures per shape:

    full  hf / glassformer       full fine-tuning, Hugging Face's step over glassformer's
    full  MFU                    6 · N_matmul · tokens per step against the matmul's FLOP/s
    lora  full / lora            glassformer's full step over its LoRA step
    lora  memory lora / full     glassformer's peak memory with LoRA over full fine-tuning
    lora  floor / full           the same for the floor under any adapter (finetune_case.py:
                                 the weights and the activations of the backward pass)
    lora  peft / glassformer     PEFT's LoRA step over glassformer's (with ``peft`` installed)

    .venv/bin/python -m benchmarks.bench_finetune                  # both shapes: ~15 min
    .venv/bin/python -m benchmarks.bench_finetune --quick          # tiny shapes: a minute

Prints a table per shape and writes bench-results/finetune.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_finetune.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import environment, percent, print_table, ratio, write_json
from benchmarks.finetune_case import SHAPES
from benchmarks.peak import MATMUL_N
from benchmarks.processes import run_isolated

CASES = ("glassformer full", "hf full", "glassformer lora", "hf lora")
OUT = "bench-results/finetune.json"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the tiny shapes, a few rounds")
    ap.add_argument("--shapes", default=None, help="comma-separated: " + ",".join(SHAPES))
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 10)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    default = "tiny-bert,tiny-gpt2" if args.quick else "bert-base,gpt2-small"
    shapes = [s for s in (args.shapes or default).split(",") if s]
    if not shapes or any(s not in SHAPES for s in shapes):
        ap.error(f"--shapes {args.shapes}: choose from {', '.join(SHAPES)}")
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 10)
    if rounds < 1:
        ap.error(f"--rounds {rounds}: need at least 1")
    env = environment(args.threads)
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}", flush=True)
    cases = [c for c in CASES if c != "hf lora" or importlib.util.find_spec("peft")]
    notes = [] if "hf lora" in cases else ["hf lora: skipped, peft is not installed"]
    results = {s: run_shape(s, cases, rounds, args.threads) for s in shapes}
    data = {"benchmark": "finetune", "environment": env, "notes": notes, "shapes": results}
    print(f"wrote {write_json(args.out, data)}")
    failed = [s for s, r in results.items() if "error" in r]
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")
    return data


def run_shape(shape: str, cases: list[str], rounds: int, threads: int) -> dict[str, Any]:
    """The paired timing and the memory of every case of ``shape``, and its table."""
    t0 = time.perf_counter()
    base = {"shape": shape, "threads": threads, "seed": 0, "warmup": 1, "reuse_memory": True}
    specs = {c: {**base, "peer": c.split()[0], "mode": c.split()[1]} for c in cases}
    timing = paired.run(
        "benchmarks.finetune_case", {**specs, paired.MATMUL: {**base, "matmul": True}}, 0.0,
        min_blocks=rounds,
    )  # fmt: skip
    if "error" in timing:
        return {"error": timing["error"]}
    floor = {**base, "peer": "glassformer", "mode": "floor"}
    memory = {c: run_isolated("benchmarks.finetune_case", spec)
              for c, spec in {**specs, "glassformer floor": floor}.items()}  # fmt: skip
    bad = {c: m["error"] for c, m in memory.items() if "error" in m}
    if bad:
        return {"error": f"memory: {bad}"}
    result = {"figures": figures(shape, timing, memory), "timing": timing, "memory": memory}
    print_shape(shape, result, time.perf_counter() - t0)
    return result


def figures(shape: str, timing: dict[str, Any], memory: dict[str, Any]) -> dict[str, Any]:
    blocks = {c: b["step"] for c, b in timing["blocks"].items()}  # ms per step, per round
    s = SHAPES[shape]
    tokens = s["batch"] * s["context"]
    d, n = s["d_model"], s["n_layer"]
    n_matmul = n * 12 * d * d + (2 * d if s["kind"] == "bert" else s["vocab"] * d)
    flop = 6 * n_matmul * tokens  # the step's matmuls, attention's T² terms aside
    peak = [2 * MATMUL_N**3 / (ms / 1000) for ms in blocks[paired.MATMUL]]  # FLOP/s a round
    mfu = [flop / (ms / 1000) / p for ms, p in zip(blocks["glassformer full"], peak, strict=True)]
    out: dict[str, Any] = {
        "ms": {c: statistics.median(b) for c, b in blocks.items() if c != paired.MATMUL},
        "full hf / glassformer": paired.per_block(blocks["hf full"], blocks["glassformer full"]),
        "full MFU": {"median": statistics.median(mfu), "min": min(mfu), "max": max(mfu)},
        "lora full / lora": paired.per_block(
            blocks["glassformer full"], blocks["glassformer lora"]
        ),
        "memory MB": {c: m["peak_rss_mb"] - m["rss_after_import_mb"] for c, m in memory.items()},
        "trainable": {c: m["trainable"] for c, m in memory.items()},
    }
    mem = out["memory MB"]
    out["lora memory lora / full"] = mem["glassformer lora"] / mem["glassformer full"]
    out["lora memory floor / full"] = mem["glassformer floor"] / mem["glassformer full"]
    if "hf lora" in blocks:
        peft_vs = paired.per_block(blocks["hf lora"], blocks["glassformer lora"])
        out["lora peft / glassformer"] = peft_vs
    return out


def print_shape(shape: str, result: dict[str, Any], wall: float) -> None:
    f = result["figures"]
    rows = [[c, f"{f['ms'][c]:.1f}" if c in f["ms"] else "-", f"{f['memory MB'][c]:.0f}",
             f"{f['trainable'][c]:,}"] for c in f["memory MB"]]  # fmt: skip

    def spread(r: dict[str, float], fmt=ratio) -> str:
        return f"{fmt(r['median'])} ({fmt(r['min'])}-{fmt(r['max'])})"

    notes = [
        f"full: hf / glassformer {spread(f['full hf / glassformer'])}; glassformer MFU "
        f"{spread(f['full MFU'], percent)}",
        f"lora: full / lora {spread(f['lora full / lora'])} (goal >= 1.3x); memory lora / "
        f"full {f['lora memory lora / full']:.2f} (goal <= 0.6), the floor under any adapter "
        f"{f['lora memory floor / full']:.2f}",
    ]
    if "lora peft / glassformer" in f:
        notes.append(f"lora: peft / glassformer {spread(f['lora peft / glassformer'])}")
    notes.append("ms: median over rounds of a block's mean step; MB: peak RSS above imports")
    header = ["case", "step ms", "peak MB", "trainable"]
    print_table(f"{shape}: {len(result['timing']['blocks'][paired.MATMUL]['step'])} paired "
                f"rounds, {wall:.0f} s", header, rows, notes)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
