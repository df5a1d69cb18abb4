"""The demo's training on a quiet and on a busy machine, with PyTorch's threads fixed at one per
core, at 1, and as ``glassformer train`` chooses them (glassformer/cli/threads.py):

    python -m benchmarks.bench_threads [--steps 150] [--rounds 3] [--busy 0 1]

Each case is the command a user runs, ``python -m glassformer train --steps N`` on the demo
config (no evaluation before the end, a 1-character sample), timed from start to exit; the
machine is made busy by BUSY other processes that spin on the CPU for the whole case. Rounds
alternate the cases, and the median of each is printed with the CPU model. A case with fixed
threads sets OMP_NUM_THREADS, which the command respects. Run it on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from .common import print_table, when_and_where

SETTINGS = [
    "--set", "train.eval_every=0", "--set", "train.save_every=0", "--set", "train.log_every=100000",
    "--set", "sample.max_new_tokens=1",
]  # fmt: skip


def run_once(steps: int, threads: int | None) -> float:
    """Seconds for one ``glassformer train`` of ``steps`` steps (threads: None = its choice)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as folder:
        argv = [sys.executable, "-m", "glassformer", "train", "--steps", str(steps)]
        start = time.perf_counter()
        subprocess.run(
            [*argv, "--out", os.path.join(folder, "run"), *SETTINGS],
            check=True,
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1])
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cases = {f"{cores} threads": cores, "1 thread": 1, "glassformer's choice": None}
    rows = []
    for busy in args.busy:
        spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)
        ]
        try:
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.rounds):
                for name, threads in cases.items():
                    times[name].append(run_once(args.steps, threads))
        finally:
            for spinner in spinners:
                spinner.kill()
        median = {name: statistics.median(t) for name, t in times.items()}
        rows.append([f"{busy} busy", *(f"{median[name]:.1f} s" for name in cases)])
    where = when_and_where()
    print_table(
        f"glassformer train, {args.steps} steps of the demo ({where['cpu']}, {cores} cores)",
        ["other processes", *cases],
        rows,
        [f"median of {args.rounds} rounds; {where['date']}"],
    )


if __name__ == "__main__":
    main()
