"""Benchmark: glassformer against an earlier version of itself, side by side in one paired run.

A goal such as "speed within 3% of before the change" compares two versions of the library on
the same shapes. Each version runs every case in a process of its own, built from its own
sources (versions_case.py), and the paired driver (paired.py) asks the two processes of a case
in turn for short blocks of steps: the ratio "this / base" is the median over rounds of the
per-step time of this checkout over the base's, with the min and max over rounds as the spread.

    python -m benchmarks.bench_versions --base a2fe57f^                 # every case
    python -m benchmarks.bench_versions --base v0.3 --cases train-tiny,cache-gpt2-small

``--base`` is a git revision of this repository (its ``src`` is extracted with ``git archive``
into a temporary folder) or a folder holding a glassformer checkout's ``src``. Cases:

    train-tiny, train-gpt2-small     a training step (peers.py's shapes, as bench_train.py)
    encoder-tiny, encoder-bert-base  a padded EncoderModel forward with fast paths (packing)
    generate-tiny, generate-gpt2-small   greedy cached generation, batch 1, 64 new tokens
    cache-gpt2-small                 run_with_cache of every hook point (bench_hooks.py)

Prints the table and writes bench-results/versions.json. A ratio above 1 means this checkout
is slower. Time figures only on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import paired
from benchmarks.common import print_table, when_and_where, write_json

ROOT = Path(__file__).resolve().parents[1]


def _cases() -> dict[str, dict[str, Any]]:
    """The cases by name. Called in the driver only: the shapes' modules import glassformer,
    which a case's process must import from its own sources (the driver's module is imported
    again in every spawned process)."""
    from benchmarks.encoder_peers import SHAPES as ENCODER_SHAPES
    from benchmarks.peers import SHAPES as TRAIN_SHAPES

    hooks = TRAIN_SHAPES["gpt2-small"]
    cases: dict[str, dict[str, Any]] = {}
    for name, shape in TRAIN_SHAPES.items():
        cases[f"train-{name}"] = {"case": "train", "shape": asdict(shape)}
    for name, shape in ENCODER_SHAPES.items():
        cases[f"encoder-{name}"] = {"case": "encoder", "shape": asdict(shape)}
    for name, shape in TRAIN_SHAPES.items():
        one = asdict(shape.replace(batch=1, context=128))
        cases[f"generate-{name}"] = {"case": "generate", "shape": one, "new": 64}
    cases["cache-gpt2-small"] = {"case": "cache", "shape": asdict(hooks)}
    return cases


def base_sources(base: str, into: Path) -> Path:
    """The ``src`` folder of ``base``: a folder given as is, or a git revision extracted."""
    folder = Path(base)
    if (folder / "glassformer").is_dir():
        return folder.resolve()
    if (folder / "src" / "glassformer").is_dir():
        return (folder / "src").resolve()
    archive = into / "src.tar"
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), base, "src"],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"bench_versions: --base {base!r} is neither a folder with glassformer's "
                 f"sources nor a git revision here: {done.stderr.strip()}")  # fmt: skip
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def compare(
    name: str, spec: dict[str, Any], base_src: Path, seconds: float, threads: int
) -> dict[str, Any]:
    """The paired runs of one case, this checkout's sources against the base's: two runs of
    ``seconds / 2``, fresh processes started in one order and then the other, rounds pooled.
    (Two processes of the same sources, paired, have differed by 2x on a short step of two
    threads, the slow one either; a pair of runs in both orders shows such a split as spread
    and keeps it out of the median.)"""
    src = {"base": str(base_src), "this": str(ROOT / "src")}
    this: list[float] = []
    base: list[float] = []
    splits = []
    for order in (("base", "this"), ("this", "base")):
        specs = {n: {**spec, "src": src[n], "threads": threads} for n in order}
        got = paired.run("benchmarks.versions_case", specs, seconds / 2)
        if "error" in got:
            return {"case": name, "error": got["error"]}
        per = got["steps_per_block"]
        this_run = [t / per["this"] for t in got["blocks"]["this"]["step"]]
        base_run = [t / per["base"] for t in got["blocks"]["base"]["step"]]
        splits.append(statistics.median(a / b for a, b in zip(this_run, base_run, strict=True)))
        this, base = this + this_run, base + base_run
    return {
        "case": name,
        "this_ms": statistics.median(this),
        "base_ms": statistics.median(base),
        "ratio": paired.per_block(this, base),
        "ratio_by_order": splits,
        "rounds": len(this),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="git revision or folder of the base sources")
    cases = _cases()
    ap.add_argument("--cases", default=",".join(cases), help=",".join(cases))
    ap.add_argument("--seconds", type=float, default=30.0, help="seconds a case")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per case (2)")
    ap.add_argument("--out", default="bench-results/versions.json")
    args = ap.parse_args(argv)
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in cases]
    if unknown:
        sys.exit(f"bench_versions: unknown case(s) {', '.join(unknown)}; allowed: "
                 f"{', '.join(cases)}")  # fmt: skip
    rows, results = [], []
    with tempfile.TemporaryDirectory() as tmp:
        base_src = base_sources(args.base, Path(tmp))
        for name in names:
            r = compare(name, cases[name], base_src, args.seconds, args.threads)
            results.append(r)
            if "error" in r:
                rows.append([name, "-", "-", r["error"][:60], "-"])
                continue
            q = r["ratio"]
            by_order = "/".join(f"{x:.3f}" for x in r["ratio_by_order"])
            rows.append([name, f"{r['base_ms']:.2f}", f"{r['this_ms']:.2f}",
                         f"{q['median']:.3f} ({q['min']:.3f}-{q['max']:.3f}, "
                         f"{r['rounds']} rounds)", by_order])  # fmt: skip
            print(f"{name}: this / base {q['median']:.3f}", flush=True)
    where = when_and_where()
    print_table(
        f"glassformer against {args.base} ({where['cpu']}, {where['date']})",
        ["case", "base ms/step", "this ms/step", "this / base: median (min-max)", "by order"],
        rows,
        [
            "paired rounds of short blocks, each version in its own process; >1: this is slower",
            "by order: the median of each run (base started first / this started first)",
        ],
    )
    write_json(args.out, {"base": args.base, "where": where, "cases": results})


if __name__ == "__main__":
    main()
