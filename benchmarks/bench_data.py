"""Benchmark: data at real size. A generated English-like text corpus (data_corpus.py: no
download) of 10 MB, 100 MB and 1 GB, prepared and trained on for one step by glassformer (char,
BPE 512, a Hugging Face tokenizer.json), nanoGPT's way (its openwebtext prepare.py to a uint16
file, then its train.py reading random windows from an np.memmap) and Hugging Face ``datasets``
+ ``tokenizers``, beside a floor: the ``tokenizers`` library alone encoding the corpus with the
same tokenizer.json on all cores (data_peers.py has each peer's commands).

For each size and peer: the first run (nothing cached) and the second (what the first left on
disk; the floor has a first run only, its "second" is None): the time to the end of the first
step (the whole command for ``datasets`` and the floor, which do not train; for nanoGPT's first
run, prepare.py's time + train.py's to its first step), the peak resident memory of the
command's process tree (data_measure.py), and the bytes of the token files on disk. The corpus
of a size is written once in a temporary folder, used by every peer, and deleted; so is every
cache. The tokenizer.json (byte-level BPE, 8,192 ids) is trained once, on 10 MB of text from
the same generator (the smallest size, when smaller).

    python -m benchmarks.bench_data --nanogpt ~/nanoGPT          # 10 MB, 100 MB, 1 GB
    python -m benchmarks.bench_data --sizes 1MB --peers glassformer-char,hf-datasets
    python -m benchmarks.bench_data --sizes 1GB --peers glassformer-hf,tokenizers-alone \\
        --keep docs/benchmarks/results/data.json     # the other rows from an earlier run

Without ``--nanogpt PATH`` (a nanoGPT checkout: git clone https://github.com/karpathy/nanoGPT)
the nanoGPT peer is left out. ``--keep FILE``: the rows of an earlier run's results for the
cases this run does not measure are carried into its results, marked with the earlier run's
date and CPU (data_keep.py; the earlier run must have the same model and vocabularies). Disk:
about 10 times the largest size, in ``--tmp`` (default: the system's temporary folder). Prints
a line per case as it goes and writes bench-results/data.json.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_data.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import environment, print_table, without_out, write_json
from benchmarks.data_corpus import hf_folder, write_corpus
from benchmarks.data_keep import carry, earlier_results
from benchmarks.data_peers import BPE_VOCAB, LABELS, MODEL, run_case

OUT = "bench-results/data.json"
SIZES = "10MB,100MB,1GB"
UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
TOKENIZER_CORPUS = 10 * 10**6
HF_VOCAB = 8192
GOALS = {  # the data path's goals, which the page checks the figures against
    "memory_flat_gib": 0.5,  # peak at the largest size within this of the smallest's
    "second_run_s": 15.0,  # a second run within this of the smallest size's second run
    "bytes_per_token": 2.0,  # for vocabularies up to 65,535 ids
}


def size_bytes(text: str) -> int:
    """'10MB' -> 10,000,000 (KB, MB, GB: powers of 1,000); ValueError naming the text."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(KB|MB|GB)", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(f"size {text!r}: give a number and KB, MB or GB, e.g. 10MB")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=SIZES, help=f"corpus sizes (default {SIZES})")
    peers = ",".join(LABELS)
    ap.add_argument("--peers", default=peers, help=f"comma-separated: {peers}")
    ap.add_argument("--rounds", type=int, default=1, help="first + second runs per case; the "
                    "round with the fastest first run is kept (default 1)")  # fmt: skip
    ap.add_argument("--nanogpt", default=None, metavar="PATH", help="a nanoGPT checkout")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1,
                    help="nanoGPT prepare.py's num_proc (default: the CPUs)")  # fmt: skip
    ap.add_argument("--tmp", default=None, help="where the corpus and caches are written")
    ap.add_argument("--keep", default=None, metavar="FILE", help="an earlier run's results: "
                    "its rows of the cases this run does not measure are carried over")  # fmt: skip
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    try:
        args.size_list = [(s.strip().upper(), size_bytes(s)) for s in args.sizes.split(",") if s]
    except ValueError as e:
        ap.error(f"--sizes: {e}")
    args.peer_list = [p for p in args.peers.split(",") if p]
    if unknown := [p for p in args.peer_list if p not in LABELS]:
        ap.error(f"--peers: unknown {unknown}; choose from {', '.join(LABELS)}")
    if not args.size_list or not args.peer_list:
        ap.error("give at least one size and one peer")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: need at least 1")
    if args.nanogpt is None and "nanogpt" in args.peer_list:
        args.peer_list.remove("nanogpt")
        if args.peers != ",".join(LABELS):  # asked for by name
            ap.error("--peers nanogpt needs --nanogpt PATH, a nanoGPT checkout")
    if args.nanogpt is not None:
        root = Path(args.nanogpt).expanduser()
        need = ["train.py", "model.py", "configurator.py", "data/openwebtext/prepare.py"]
        if missing := [n for n in need if not (root / n).is_file()]:
            ap.error(f"--nanogpt {args.nanogpt}: no {', '.join(missing)}; give a nanoGPT checkout")
        args.nanogpt = root.resolve()
    args.earlier = None
    if args.keep is not None:
        same = {"model": MODEL, "hf_vocab": HF_VOCAB, "bpe_vocab": BPE_VOCAB}
        try:
            args.earlier = earlier_results(args.keep, same)
        except ValueError as e:
            ap.error(f"--keep: {e}")
    return args


def _pkg(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    env = environment(threads=0)
    del env["threads"]  # torch's threads are each command's own choice
    env |= {n: _pkg(n) for n in ("tokenizers", "datasets", "tiktoken", "numpy")}
    print(f"{env['cpu']}, {env['cpus']} CPUs, load average {env['load_average'][0]:.2f}; "
          f"sizes {args.sizes}; peers {', '.join(args.peer_list)}", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-data-", dir=args.tmp) as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        hf_dir = tmp / "hf-model"
        if set(args.peer_list) & {"glassformer-hf", "nanogpt", "hf-datasets", "tokenizers-alone"}:
            smallest = min(n for _, n in args.size_list)
            write_corpus(tmp / "tokenizer-corpus.txt", min(TOKENIZER_CORPUS, smallest))
            hf_folder(tmp / "tokenizer-corpus.txt", hf_dir, HF_VOCAB)
            print(f"tokenizer.json trained ({time.perf_counter() - t0:.0f} s)", flush=True)
        shared = {"hf_dir": hf_dir, "tokenizer_json": hf_dir / "tokenizer.json",
                  "vocab": HF_VOCAB, "nanogpt": args.nanogpt, "procs": args.procs}  # fmt: skip
        for label, n in args.size_list:
            t0 = time.perf_counter()
            corpus = write_corpus(tmp / f"corpus-{label}.txt", n)
            print(f"{label}: corpus written ({time.perf_counter() - t0:.0f} s)", flush=True)
            for peer in args.peer_list:
                row = {"size": label, "bytes": n, "peer": peer, "label": LABELS[peer]}
                row |= best_round(peer, corpus, tmp / "case", shared, args.rounds)
                print_row(row)
                rows.append(row)
            corpus.unlink()
    env["load_average_after"] = list(os.getloadavg())
    failed = sum("error" in r for r in rows)  # this run's: a carried row failed before
    sizes = [label for label, _ in args.size_list]
    if args.earlier is not None:
        rows, sizes = carry(rows, args.size_list, args.earlier)
    data = {
        "benchmark": "data",
        "environment": env,
        "argv": without_out(sys.argv[1:] if argv is None else list(argv)),
        "settings": {
            "sizes": sizes,
            "rounds": args.rounds,
            "model": MODEL,
            "hf_vocab": HF_VOCAB,
            "bpe_vocab": BPE_VOCAB,
            "nanogpt_procs": args.procs,
            "goals": GOALS,
        },
        "peers": {p: LABELS[p] for p in LABELS if any(r["peer"] == p for r in rows)},
        "rows": rows,
    }
    report(rows)
    out = write_json(args.out, data)
    print(f"wrote {out}")
    if failed:
        raise SystemExit(f"{failed} case(s) failed")
    return data


def best_round(peer: str, corpus: Path, folder: Path, shared: dict, rounds: int) -> dict:
    """The case's rounds; the one whose first run was ready soonest, with every round's
    ready_s in "rounds" (a failed round is skipped; all failed: the first error)."""
    got = [run_case(peer, corpus, folder, shared) for _ in range(rounds)]
    ok = [r for r in got if "error" not in r]
    if not ok:
        return got[0]
    best = min(ok, key=lambda r: r["first"]["ready_s"])
    return {**best, "rounds": [r["first"]["ready_s"] for r in ok]}


def gib(mb: float) -> str:
    return f"{mb / 1024:.2f}"


def cells(r: dict[str, Any]) -> list[str]:
    """A row's cells (HEADER); "-" for a run or figure it has not, such as the floor's second
    run; a carried row's peer says when it was measured."""
    label = r["label"]
    if old := r.get("carried"):
        label += f" (earlier run, {(old['date'] or 'undated')[:10]})"
    if "error" in r:
        return [r["size"], label, "failed", "", "", "", "", ""]
    runs = []
    for run in (r["first"], r["second"]):
        runs += [f"{run['ready_s']:.1f}", gib(run["peak_rss_mb"])] if run else ["-", "-"]
    bpt = r.get("bytes_per_token")
    return [r["size"], label, *runs, f"{r['cache_bytes'] / 1e6:,.1f}",
            "-" if bpt is None else f"{bpt:.2f}"]  # fmt: skip


HEADER = ["size", "peer", "first s", "first GiB", "second s", "second GiB", "cache MB", "B/token"]


def print_row(r: dict[str, Any]) -> None:
    print("  " + "  ".join(cells(r)) + (f"  {r['error']}" if "error" in r else ""), flush=True)


def report(rows: list[dict[str, Any]]) -> None:
    print()
    print_table(
        "DATA AT REAL SIZE: time to the first step and peak memory of the process tree",
        HEADER,
        [cells(r) for r in rows],
        ["s: to the end of the first step (HF datasets, tokenizers alone: of the command; "
         "nanoGPT's first run: prepare.py + train.py); GiB: peak RSS of all its processes; "
         "cache MB: token files on disk (HF datasets: its Arrow cache); -: none (tokenizers "
         "alone has no second run)"],
    )  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
