"""Benchmark: what each CPU fast path of glassformer.fast earns on the benchmark that motivated
it. The same model runs with the path on (as built) and with that one path switched to its
reference form; everything else stays as it is.

    packing  inference on the real tokens of a padded batch (fast/packing.py); off: the
             model told ``use_fast_paths(False)``, the reference layout. Encoder inference on a
             padded batch, BERT layout: tiny (4 layers, 128, 4 heads) and base (BERT base:
             12 layers, 768, 12 heads).
    layout   input-major weights while decoding (fast/layout.py); off: the weights as
             built. GPT-2 small (12 layers, 768, 12 heads, V 50257): one cached decoding
             step of one row (base only); and the re-lay alone (enter + exit), with the
             number of steps whose saving repays it.

Every case runs in eval mode without gradients, float32, random weights and tokens. The
encoders take bench_encoder's batches: T 64, B 16 (tiny) and T 128, B 8 (base); padded,
the rows have lengths uniform in [T/4, T] (fixed seed, the first row full). Layout runs only at
GPT-2 small, which ``--shapes base`` selects (``--quick`` leaves it out, with a note).

Before timing, each case checks that on and off compute the same outputs (at real tokens; max
|on - off| <= 1e-5 max(1, max |off|)), so the same computation is timed, and for packing that
the path runs on the batch. Then paired rounds in one process (benchmarks/paired.py), at least
``--rounds`` (15) and for at least ``--seconds`` (30) a case: each round times one block of
"on" and one of "off" (as many passes as last about 0.25 s, at least one; the order reversed
every other round), after a warm-up of each. The speed-up is the median over rounds of the
round's off / on time, with its min and max; on and off ms are the medians of the blocks'
mean pass.

Verdict against the 5% a fast path must earn: "inside the spread" when min < 1.05 < max and
the median is within 1.05 +- 0.02; otherwise "earns" when the median is at least 1.05, "does
not" below.

    .venv/bin/python -m benchmarks.bench_fast_paths              # every path and shape: ~5 min
    .venv/bin/python -m benchmarks.bench_fast_paths --quick      # tiny shapes: seconds

Prints a table and writes bench-results/fast_paths.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_fast_paths.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import encoder_peers, paired, peers
from benchmarks.common import Shape, environment, write_json
from benchmarks.fast_paths_report import EARNS, SPREAD, print_report, relay_note, verdict
from glassformer.fast import fast_paths, packing
from glassformer.fast.layout import input_major_weights
from glassformer.models import DecoderLM, EncoderModel, base

PATHS = ("packing", "layout")
SHAPES = ("tiny", "base")
TOLERANCE = 1e-5  # on and off agree: max |on - off| <= TOLERANCE * max(1, max |off|)
BLOCK_S = 0.25  # seconds a block of passes lasts (at least one pass)
PROMPT = 16  # layout: tokens cached before the timed step
GPT2_SMALL = Shape(n_layer=12, n_head=12, d_model=768, context=1024, batch=1, vocab=50257)


@dataclass(frozen=True)
class Case:
    """One measurement: ``path`` at ``shape`` on ``workload`` (encoder-padded,
    decode-step) of a model of ``size``."""

    path: str
    shape: str
    workload: str
    size: Shape

    @property
    def name(self) -> str:
        return f"{self.path}/{self.shape}/{self.workload}"


def cases(paths: list[str], shapes: list[str]) -> list[Case]:
    enc = {"tiny": encoder_peers.SHAPES["tiny"], "base": encoder_peers.SHAPES["bert-base"]}
    table = [
        *(Case("packing", s, "encoder-padded", enc[s]) for s in SHAPES),
        Case("layout", "base", "decode-step", GPT2_SMALL),
    ]
    return [c for c in table if c.path in paths and c.shape in shapes]


# The switches: the model as built (on), or with one path in its reference form (off) ----------
def switch(model: torch.nn.Module, path: str, on: bool):
    """A context manager: inside it ``model`` runs with ``path`` on or off."""
    if path == "layout":
        return input_major_weights(model, on)
    return fast_paths(model, on)


# Workloads: (model, step) where step() returns the outputs to compare ---------------------------
def build(case: Case) -> tuple[torch.nn.Module, Callable[[], torch.Tensor]]:
    torch.manual_seed(0)
    if case.workload == "encoder-padded":
        model = EncoderModel(encoder_peers.glassformer_config(case.size)).eval()
        ids, mask = encoder_peers.make_batch(case.size)
        real = mask.bool()  # (B, T): compare real tokens only

        @torch.no_grad()
        def step() -> torch.Tensor:
            return model(ids, mask).hidden_states[real]

        return model, step
    model = DecoderLM(peers.glassformer_config(case.size)).eval()
    prompt = torch.randint(0, case.size.vocab, (1, PROMPT))
    cache = model.new_cache(PROMPT + 1)
    with torch.inference_mode():
        model(prompt, cache=cache)  # the prompt's keys and values, once
    token = torch.tensor([[7]])

    @torch.inference_mode()
    def decode() -> torch.Tensor:
        for layer in cache.self_attn:  # rewind: every step decodes position PROMPT
            layer.length = PROMPT
        return model(token, cache=cache).logits

    return model, decode


def difference(model: torch.nn.Module, path: str, step: Callable[[], torch.Tensor]) -> float:
    """max |on - off| / max(1, max |off|) of the step's outputs."""
    with switch(model, path, True):
        on = step().double()
    with switch(model, path, False):
        off = step().double()
    return float((on - off).abs().max() / off.abs().max().clamp(min=1.0))


def packing_runs(model: torch.nn.Module, step: Callable[[], torch.Tensor]) -> bool:
    """Does the step take the packing path (its conditions met), with the path on?"""
    ran, real = [], base.packing_for

    def spy(*args):
        ran.append(real(*args) is not None)
        return None if not ran[-1] else packing.packing_for(*args)

    base.packing_for = spy
    try:
        with fast_paths(model, True):
            step()
    finally:
        base.packing_for = real
    return any(ran)


class Side:
    """One half of a paired round: ``step`` with the path on or off, warmed up first."""

    def __init__(self, model, path: str, on: bool, step, warmup: int) -> None:
        self.state = lambda: switch(model, path, on)
        self.step = step
        with self.state():
            for _ in range(warmup):
                step()

    def block(self, n: int) -> dict[str, float]:
        with self.state():  # outside the timing: the layout's re-lay is timed apart
            return paired.run_block(self.step, n)


def relay_ms(model: torch.nn.Module, times: int) -> list[float]:
    """ms of re-laying the weights input-major and back (enter + exit), ``times`` times."""
    out = []
    for _ in range(times):
        t0 = time.perf_counter()
        with input_major_weights(model, True):
            pass
        out.append(1000 * (time.perf_counter() - t0))
    return out


# Measuring ---------------------------------------------------------------------------------------
def measure(case: Case, rounds: int, seconds: float, warmup: int) -> dict[str, Any]:
    model, step = build(case)
    diff = difference(model, case.path, step)
    result: dict[str, Any] = {"path": case.path, "shape": case.shape,
                              "workload": case.workload, "size": asdict(case.size),
                              "difference": diff}  # fmt: skip
    if diff > TOLERANCE:
        return {**result, "error": f"on and off differ by {diff:.3g} (> {TOLERANCE:g})"}
    if case.path == "packing" and not packing_runs(model, step):
        return {**result, "error": "packing does not run on this batch: nothing to time"}
    sides = {side: Side(model, case.path, side == "on", step, warmup) for side in ("on", "off")}
    run = paired.interleave(sides, seconds, min_blocks=rounds, block_s=BLOCK_S)
    ms = {side: run["blocks"][side]["step"] for side in ("on", "off")}
    speed = paired.per_block(ms["off"], ms["on"])
    result.update(
        on_ms=statistics.median(ms["on"]),
        off_ms=statistics.median(ms["off"]),
        speedup=speed,
        rounds=len(ms["on"]),
        verdict=verdict(speed),
        steps_per_block=run["steps_per_block"],
        blocks_ms=ms,
    )
    if case.path == "layout":
        relay = relay_ms(model, max(2, warmup))
        saved = result["off_ms"] - result["on_ms"]
        result["relay_ms"] = {"median": statistics.median(relay), "min": min(relay),
                              "max": max(relay)}  # fmt: skip
        result["break_even_steps"] = statistics.median(relay) / saved if saved > 0 else None
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes, a few short rounds")
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated: " + ",".join(PATHS))
    ap.add_argument("--shapes", default=None, help="comma-separated: tiny,base (default both)")
    ap.add_argument("--rounds", type=int, default=None, help="at least N rounds (default 15)")
    ap.add_argument("--seconds", type=float, default=None, help="rounds for at least S s a case")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--out", default="bench-results/fast_paths.json")
    args = ap.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    shapes = [s for s in (args.shapes or ("tiny" if args.quick else ",".join(SHAPES))).split(",")]
    unknown = [p for p in paths if p not in PATHS] + [s for s in shapes if s not in SHAPES]
    if unknown or not paths or not shapes:
        ap.error(f"--paths {args.paths} --shapes {args.shapes}: choose from {PATHS} and {SHAPES}")
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 15)
    seconds = args.seconds if args.seconds is not None else (0.5 if args.quick else 30.0)
    if rounds < 1:
        ap.error(f"--rounds {rounds}: need at least 1")
    warmup = 1 if args.quick else 3
    torch.set_num_threads(args.threads)
    env = environment(args.threads)
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}, "
          f"load average {env['load_average'][0]:.2f}", flush=True)  # fmt: skip
    notes = []
    if "layout" in paths and "base" not in shapes:
        notes.append("layout: skipped, measured at GPT-2 small only (--shapes base)")
        print(notes[-1], flush=True)
    results = {}
    t0 = time.perf_counter()
    for case in cases(paths, shapes):
        print(f"  {case.name}: {case.size.describe()}", flush=True)
        results[case.name] = r = measure(case, rounds, seconds, warmup)
        done = f"FAILED {r['error']}" if "error" in r else f"{r['rounds']} rounds"
        print(f"    on vs off differ by {r['difference']:.2g}; {done}", flush=True)
    notes += [relay_note(r) for r in results.values() if "relay_ms" in r]
    print_report(results, notes, time.perf_counter() - t0)
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "fast_paths",
        "environment": env,
        "rule": {"earns": EARNS, "spread": SPREAD, "tolerance": TOLERANCE},
        "notes": notes,
        "cases": results,
    }
    print(f"wrote {write_json(args.out, data)}")
    failed = sum("error" in r for r in results.values())
    if failed:
        raise SystemExit(f"{failed} case(s) failed")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
