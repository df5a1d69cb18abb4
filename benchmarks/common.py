"""Shared parts of the model benchmarks (bench_train.py, bench_encoder.py): shapes, timing,
rounds, command-line options and tables (the matmul peak: peak.py).

* Timing: warm-up steps are run and thrown away (at least ``warmup`` steps and ``warmup_s``
  seconds), then steps are timed until ``seconds`` have passed (at least ``min_steps``, at most
  ``max_steps``); a case reports the median and the min-max of its timed steps.
* Matrix-multiply peak (peak.py): the best GFLOP/s of a 2048 x 2048 float32 matmul, measured
  in the same run and with the same thread count as the cases. MFU = achieved model FLOP/s /
  that peak, with the model FLOPs counted by glassformer's ``flops_per_token`` formula for every
  peer of a shape, so that the MFU of the peers is comparable.
* Peak memory: the resident-set high-water mark of the case's own process over the warm-up
  and timed steps (processes.py); faults/step: its minor page faults per timed step, the
  pages the allocator returned to the system and had mapped and zero-filled again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.peak import describe_peak
from benchmarks.processes import minor_faults, peak_rss_mb, reset_peak_rss, ru_maxrss_mb


# Shapes --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    n_layer: int
    n_head: int
    d_model: int
    context: int  # T, tokens per sequence
    batch: int  # B
    vocab: int

    @property
    def tokens(self) -> int:
        return self.batch * self.context

    def replace(self, **changes: int) -> Shape:
        return replace(self, **changes)

    def describe(self) -> str:
        return (
            f"{self.n_layer} layers, d_model {self.d_model}, {self.n_head} heads, "
            f"context {self.context}, batch {self.batch}, vocabulary {self.vocab}"
        )


# Timing ----------------------------------------------------------------------------------------
@dataclass
class Timing:
    """Milliseconds of the timed steps of one phase: median, min, max."""

    median_ms: float
    min_ms: float
    max_ms: float
    steps: int

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        ms = [1000 * s for s in seconds]
        return cls(statistics.median(ms), min(ms), max(ms), len(ms))


def fmt_timing(t: dict[str, float]) -> str:
    """'median (min-max)' of a Timing written as a dict."""
    return f"{t['median_ms']:.1f} ({t['min_ms']:.1f}-{t['max_ms']:.1f})"


@dataclass
class Budget:
    """How long a case is run: warm-up (excluded) and timed steps."""

    warmup: int = 2
    warmup_s: float = 1.0
    min_steps: int = 5
    max_steps: int = 50
    seconds: float = 3.0


def measure(step: Callable[[], dict[str, float]], budget: Budget) -> dict[str, Any]:
    """Run ``step`` (which returns its phase durations in seconds, e.g. {"step": ..,
    "fwd_bwd": ..}) through the warm-up and the timed steps; the peak RSS is taken over both."""
    reset_peak_rss()
    t0 = time.perf_counter()
    first = step()
    first_s = time.perf_counter() - t0
    done = 1
    while done < budget.warmup or time.perf_counter() - t0 < budget.warmup_s:
        step()
        done += 1
    samples: list[dict[str, float]] = []
    faults = minor_faults()
    t1 = time.perf_counter()
    while len(samples) < budget.min_steps or (
        len(samples) < budget.max_steps and time.perf_counter() - t1 < budget.seconds
    ):
        samples.append(step())
    faults = minor_faults() - faults
    return {
        "timing": {k: asdict(Timing.of([s[k] for s in samples])) for k in first},
        "faults_per_step": faults / len(samples),
        "warmup_steps": done,
        "first_step_s": first_s,
        "peak_rss_mb": peak_rss_mb(),
        "ru_maxrss_mb": ru_maxrss_mb(),
    }


# Rounds ---------------------------------------------------------------------------------------
def best_of_rounds(
    run_one: Callable[[Any], dict[str, Any]],
    keys: list[Any],
    rounds: int,
    merge: Callable[[list[dict[str, Any]]], dict[str, Any]],
) -> dict[Any, dict[str, Any]]:
    """Run the case of each key ``rounds`` times, round-robin (k1, k2, ..., k1, k2, ...), and
    ``merge`` each key's results into one. On a shared or virtual machine a whole process can
    land slow for reasons outside it (scheduling, memory placement): one process per
    measurement can then be 20-40% off, and interleaving spreads slow stretches over all peers."""
    got: dict[Any, list[dict[str, Any]]] = {k: [] for k in keys}
    for _ in range(rounds):
        for k in keys:
            got[k].append(run_one(k))
    return {k: merge(results) for k, results in got.items()}


def fastest(results: list[dict[str, Any]], phase: str, part: str | None = None) -> dict[str, Any]:
    """The result (or its ``part``) whose median ``phase`` time is lowest; its ``rounds`` lists
    the median of every round (ms). A failed round is skipped; all failed: the first error."""
    parts = [r if part is None else r.get(part) for r in results if "error" not in r]
    parts = [p for p in parts if p is not None]
    if not parts:
        return results[0] if part is None else {"error": results[0].get("error", "failed")}
    medians = [p["timing"][phase]["median_ms"] for p in parts]
    best = parts[medians.index(min(medians))]
    return {**best, "rounds": medians}


# Command line ---------------------------------------------------------------------------------
def add_common_args(ap: argparse.ArgumentParser, shapes, peers, out: str) -> None:
    ap.add_argument("--quick", action="store_true", help="the tiny shape only, few steps")
    ap.add_argument("--shapes", default=None, help="comma-separated: " + ",".join(shapes))
    ap.add_argument("--peers", default=",".join(peers), help="comma-separated: " + ",".join(peers))
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--seconds", type=float, default=None, help="timed seconds per case")
    ap.add_argument("--min-steps", type=int, default=None, help="timed steps at least")
    ap.add_argument("--in-process", action="store_true", help="no subprocess per case (tests)")
    ap.add_argument(
        "--rounds", type=int, default=None,
        help="processes per case, interleaved; the fastest is kept (default 3, --quick 1)",
    )  # fmt: skip
    ap.add_argument(
        "--paired-seconds", type=float, default=None, metavar="S",
        help="seconds of the paired run per shape (paired.py; 0: none; default 30, --quick 1)",
    )  # fmt: skip
    ap.add_argument("--out", default=out)


def finish_args(ap: argparse.ArgumentParser, args: argparse.Namespace, shapes, peers) -> None:
    """Check the selection; add ``names``, ``peer_list``, ``budget`` and ``repeat``."""
    quick = args.quick
    args.names = (args.shapes or ("tiny" if quick else ",".join(shapes))).split(",")
    args.peer_list = [p for p in args.peers.split(",") if p]
    unknown = [n for n in args.names if n not in shapes]
    unknown += [p for p in args.peer_list if p not in peers]
    if unknown or "glassformer" not in args.peer_list:
        ap.error(f"unknown shape or peer {unknown}; glassformer must be one of the peers")
    args.budget = Budget(
        warmup=1 if quick else 2,
        warmup_s=0.2 if quick else 1.0,
        min_steps=args.min_steps or (3 if quick else 5),
        max_steps=10 if quick else 50,
        seconds=(0.5 if quick else 3.0) if args.seconds is None else args.seconds,
    )
    args.repeat = 3 if quick else 10  # matmul peak: best of
    if args.rounds is None:
        args.rounds = 1 if quick else 3
    if args.paired_seconds is None:
        args.paired_seconds = 1.0 if quick else 30.0
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: need at least 1")


def print_header(env: dict[str, Any], peaks: dict[str, dict[str, Any]]) -> None:
    print(
        f"torch {env['torch']}, transformers {env['transformers']}, {env['threads']} threads, "
        f"{env['cpu']}, load average {env['load_average'][0]:.2f}"
    )
    print("\n".join(describe_peak(p) for p in peaks.values()), flush=True)
    spare = (env["cpus"] or 1) - env["threads"]
    if env["load_average"][0] > spare + 0.5:
        print(
            f"warning: load average {env['load_average'][0]:.1f} on {env['cpus']} CPUs with "
            f"{env['threads']} threads: other processes compete, timings will be distorted"
        )


# Reporting ------------------------------------------------------------------------------------
def environment(threads: int) -> dict[str, Any]:
    def pkg(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "torch": pkg("torch"),
        "transformers": pkg("transformers"),
        "glassformer": pkg("glassformer"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "threads": threads,
        "load_average": list(os.getloadavg()),
        **when_and_where(),
    }


def when_and_where() -> dict[str, Any]:
    """The date (UTC) and the CPU model of a run, for its JSON: figures are read with both."""
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu": _cpu_model()}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def write_json(path: str | Path, data: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def print_table(title: str, header: list[str], rows: list[list[str]], notes: list[str]) -> None:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)])

    print(title)
    head = line(header)
    print(head + "\n" + "-" * len(head))
    for r in rows:
        print(line(r))
    for n in notes:
        print("  " + n)
    print()


def ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def without_out(argv: list[str]) -> list[str]:
    """The options of the run, where it wrote left out (the command the pages show)."""
    kept, skip = [], False
    for a in argv:
        if not skip and a != "--out" and not a.startswith("--out="):
            kept.append(a)
        skip = a == "--out"
    return kept
