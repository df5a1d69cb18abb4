"""Run every benchmark in turn: ``python -m benchmarks [--quick] [--only NAMES] [--threads N]``.

    tokenizers   bench_tokenizers.py   BPE training and encoding vs HF tokenizers, tiktoken
    train        bench_train.py        training step vs HF GPT-2 and torch.nn layers
    encoder      bench_encoder.py      encoder inference vs torch.nn's fast path and HF BERT
    generation   bench_generation.py   cached generation vs HF generate (when present)
    hooks        bench_hooks.py        run_with_cache (every hook point) vs a plain forward
    fast_paths   bench_fast_paths.py   each CPU fast path on vs its reference form
    graph_attention  bench_graph_attention.py  attention on a graph: sparse vs dense masked
    recurrence   bench_recurrence.py   a self-attention layer vs torch.nn.LSTM and GRU
    patching     bench_patching.py     patching grids vs TransformerLens's patching

``--quick`` is passed to each (seconds to a minute or so in all); ``--threads`` to those that
take it. Each writes bench-results/<name>.json. The exit status is 1 if any of them failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

BENCHMARKS = {
    "tokenizers": "bench_tokenizers",
    "train": "bench_train",
    "encoder": "bench_encoder",
    "generation": "bench_generation",
    "hooks": "bench_hooks",
    "fast_paths": "bench_fast_paths",
    "graph_attention": "bench_graph_attention",
    "recurrence": "bench_recurrence",
    "patching": "bench_patching",
}
TAKES_THREADS = {"train", "encoder", "generation", "hooks", "fast_paths", "graph_attention",
                 "recurrence", "patching"}


def available() -> list[str]:
    here = Path(__file__).resolve().parent
    return [name for name, module in BENCHMARKS.items() if (here / f"{module}.py").exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the short version of each benchmark")
    ap.add_argument("--only", default=None, help="comma-separated: " + ",".join(BENCHMARKS))
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default 2)")
    args = ap.parse_args(argv)
    names = available() if args.only is None else [n for n in args.only.split(",") if n]
    missing = [n for n in names if n not in available()]
    if missing:
        ap.error(f"no such benchmark {missing}; available: {available()}")
    failed = []
    for name in names:
        bench_argv = ["--quick"] if args.quick else []
        if args.threads is not None and name in TAKES_THREADS:
            bench_argv += ["--threads", str(args.threads)]
        print(f"=== {name}: {BENCHMARKS[name]} {' '.join(bench_argv)}".rstrip(), flush=True)
        t0 = time.perf_counter()
        try:
            importlib.import_module(f"benchmarks.{BENCHMARKS[name]}").main(bench_argv)
        except SystemExit as err:  # argparse errors, failed cases
            if err.code not in (None, 0):
                print(f"{name}: {err}", file=sys.stderr)
                failed.append(name)
        except Exception:  # report, go on with the next benchmark
            traceback.print_exc()
            failed.append(name)
        print(f"=== {name}: {time.perf_counter() - t0:.0f} s\n", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
