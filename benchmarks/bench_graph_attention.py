"""Benchmark: attention on a graph, glassformer's sparse path against dense masked attention.

"Formal Algorithms for Transformers", Transformers as GNNs: sparse attention is a GNN on a
sparse graph, and glassformer runs it at the cost of its edges (nn/graph_attention.py). This
measures that cost beside dense attention on the same graph, forward + backward, batch 1,
float32, random weights and inputs, d_model 512, 8 heads (head size 64), at T = 1024 .. 16384:

    window         graphs.sliding_window(128): |i - j| < 128, 255 keys per query
    bigbird        graphs.bigbird(128, n_global=2, n_random=3, seed=0)
    window-causal  graphs.sliding_window(128, causal=True): the 128 latest positions

Two levels (``--levels``), each with the same weights and inputs for both peers:

    layer      glassformer.nn.MultiHeadAttention(512, 8), x (1, T, 512) -> y
    attention  the attention alone, q, k, v (1, 8, T, 64) -> z

and two peers:

    sparse     the graph given as a graph: ``layer(x, graph=g)`` / ``graph_attention(q, k, v, g)``,
               which take the cheapest path by themselves ("path" says which ran: local, edges
               or dense)
    dense      the graph as its dense (T, T) bool mask, ``g.mask(T)``: ``layer(x, mask=m)`` /
               ``fused_attention(q, k, v, m)``, torch's fused SDPA with a boolean mask ("sdpa"
               says which of its kernels torch picks)

A step is the forward pass, loss = Σ y ⊙ W for a fixed random W, and the backward pass to the
inputs and the weights. Each (level, graph, T, peer) runs in a process of its own: it builds the
inputs (and the layer), runs every kernel once at T = 384 (so that the libraries' first-use
set-up is not counted), hands the heap's free memory back (malloc_trim) and reads the resident
set size: the baseline. The dense peer then builds its mask (counted: T² bytes, 64 MB at 8k;
``g.mask(T)``, computed a block of rows at a time), the high-water mark VmHWM is reset, and the
steps run: warm-up steps, then timed steps, whose median is reported. Each case runs in
``--rounds`` processes (default 2), interleaved with the other peer's, and the fastest round is
kept, its memory with it. **MB** is the peak resident set above the baseline: activations,
gradients, workspace and what the allocator kept. Guards: each case runs under a data-size limit
(``--memory-limit-gb``, RLIMIT_DATA, default 16), so that an allocation past it fails in the
case ("OOM") instead of pressing on the rest of the machine, and a time limit
(``--case-timeout``). The JSON keeps both peers' losses of the first step (they agree: the same
function).

Goals (the issue's): at T = 8192 the sparse path at least 5x faster than dense and at least
10x less memory; the sparse path's time and memory within 1.3x of linear in T from 2048 to
16384 (time(16k) / time(2k) / 8 <= 1.3); dense may run out of memory at 16384, sparse not.

    .venv/bin/python -m benchmarks.bench_graph_attention          # everything: ~25 minutes
    .venv/bin/python -m benchmarks.bench_graph_attention --quick  # T 1024, 2048, two graphs
    .venv/bin/python -m benchmarks.bench_graph_attention --levels layer --sizes 8192

Prints a table per (level, graph) and writes bench-results/graph_attention.json.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_graph_attention.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import environment, write_json
from benchmarks.graph_attention_report import compare, goals, report, scaling, summary
from benchmarks.processes import execute, peak_rss_mb, reset_peak_rss, rss_mb, run_isolated
from glassformer import graphs
from glassformer.nn import MultiHeadAttention
from glassformer.nn import graph_attention as ga
from glassformer.nn.scaled_dot_product import fused_attention

GRAPHS: dict[str, Callable[[int], graphs.AttentionGraph]] = {
    "window": lambda w: graphs.sliding_window(w),
    "bigbird": lambda w: graphs.bigbird(w, n_global=2, n_random=3, seed=0),
    "window-causal": lambda w: graphs.sliding_window(w, causal=True),
}
LEVELS = ("layer", "attention")
PEERS = ("sparse", "dense")
SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES, QUICK_GRAPHS = (1024, 2048), ("window", "bigbird")
WINDOW = 128
PREWARM_T = 384  # the kernels' warm-up before the baseline
MASK_CHUNK = 1 << 22  # (query, key) pairs of the dense mask computed at a time
D_MODEL, N_HEAD = 512, 8
OOM_WORDS = ("can't allocate memory", "out of memory", "Cannot allocate memory")


# One case (runs in a process of its own) --------------------------------------------------------
def build(level: str, t: int) -> tuple[dict[str, torch.Tensor], torch.nn.Module | None]:
    """The inputs (requiring gradients), the loss weights W and, for "layer", the layer."""
    if level == "layer":
        layer = MultiHeadAttention(D_MODEL, N_HEAD)
        x = torch.randn(1, t, D_MODEL, requires_grad=True)
        return {"x": x, "w": torch.randn(1, t, D_MODEL)}, layer
    d = D_MODEL // N_HEAD
    qkv = {n: torch.randn(1, N_HEAD, t, d, requires_grad=True) for n in ("q", "k", "v")}
    return {**qkv, "w": torch.randn(1, N_HEAD, t, d)}, None


def make_step(level, peer, g, mask, inputs, layer) -> Callable[[], float]:
    """One forward + backward; returns the loss."""
    leaves = [u for u in inputs.values() if u.requires_grad]

    def forward() -> torch.Tensor:
        if level == "layer":
            kw = {"graph": g} if peer == "sparse" else {"mask": mask}
            return layer(inputs["x"], **kw)[0]
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        if peer == "sparse":
            return ga.graph_attention(q, k, v, g)
        return fused_attention(q, k, v, mask)

    def step() -> float:
        loss = (forward() * inputs["w"]).sum()
        loss.backward()
        for u in leaves:
            u.grad = None
        if layer is not None:
            layer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step


def dense_mask(g: graphs.AttentionGraph, t: int) -> torch.Tensor:
    """The dense peer's (T, T) bool mask, ``g.mask(T)``, built a block of rows at a time:
    ``allows`` on all T² pairs at once takes several bytes of temporaries per pair (BigBird's
    random keys: 24, more than 16 GB at T = 16384), which is not the attention's cost."""
    pos = torch.arange(t)
    rows = max(1, MASK_CHUNK // t)
    return torch.cat([g.allows(pos[a : a + rows, None], pos, t) for a in range(0, t, rows)])


def prewarm(level: str, g, layer) -> None:
    """Run every kernel once at a small size (the band kernel, SDPA with a mask, the layer's
    matmuls), so that the libraries' first-use set-up is in the baseline of both peers."""
    t = PREWARM_T
    small, _ = build(level, t)
    for peer in PEERS:
        make_step(level, peer, g, g.mask(t), small, layer)()
    q, k, v = (torch.randn(1, N_HEAD, t, 16, requires_grad=True) for _ in range(3))
    ga.graph_attention(q, k, v, g, path="local").sum().backward()


def release_freed_memory() -> None:
    """Collect garbage and hand the heap's free memory back to the system (glibc's
    malloc_trim), so that the baseline RSS is the live memory and the steps' memory shows
    in the peak above it."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)


class PathSpy:
    """Records which of graph_attention's paths run (local, edges, dense)."""

    NAMES: ClassVar = {
        "local_attention": "local",
        "edge_attention": "edges",
        "fused_attention": "dense",
    }

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.saved = {n: getattr(ga, n) for n in self.NAMES}

    def __enter__(self) -> PathSpy:
        for name, fn in self.saved.items():
            setattr(ga, name, self._wrap(name, fn))
        return self

    def __exit__(self, *exc) -> None:
        for name, fn in self.saved.items():
            setattr(ga, name, fn)

    def _wrap(self, name, fn):
        def spy(*args, **kwargs):
            self.seen.add(self.NAMES[name])
            return fn(*args, **kwargs)

        return spy


def sdpa_kernel(t: int, mask: torch.Tensor) -> str:
    """The fused kernel torch picks for (1, 8, T, 64) float32 with this mask."""
    from torch.nn.attention import SDPBackend

    q = torch.empty(1, N_HEAD, t, D_MODEL // N_HEAD)  # never written: no memory touched
    try:
        return SDPBackend(torch._fused_sdp_choice(q, q, q, mask)).name.lower()
    except (AttributeError, RuntimeError, ValueError):
        return "unknown"


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """One (level, graph, T, peer): its median step, peak memory above the baseline and the
    path that ran; {"oom": ...} when an allocation failed."""
    own = spec.get("isolated", False)  # in a process of its own (not a smoke test's)
    if own and spec.get("memory_limit_gb"):
        soft = int(spec["memory_limit_gb"] * 2**30)
        resource.setrlimit(
            resource.RLIMIT_DATA, (soft, resource.getrlimit(resource.RLIMIT_DATA)[1])
        )
    level, peer, t = spec["level"], spec["peer"], spec["t"]
    g = GRAPHS[spec["graph"]](spec["window"])
    torch.manual_seed(spec.get("seed", 0))
    inputs, layer = build(level, t)
    prewarm(level, g, layer)
    if own:
        release_freed_memory()
    base = rss_mb()
    out: dict[str, Any] = {"base_rss_mb": base}
    try:
        mask = dense_mask(g, t) if peer == "dense" else None
        if mask is not None:
            out["mask_mb"] = mask.numel() / 2**20
            out["sdpa"] = sdpa_kernel(t, mask)
            if own:  # the mask stays; the temporaries that computed it go
                release_freed_memory()
        step = make_step(level, peer, g, mask, inputs, layer)
        reset_peak_rss()
        with PathSpy() as spy:
            out.update(timed(step, spec["budget"]))
        if peer == "sparse":
            out["path"] = ",".join(sorted(spy.seen)) or "none"
    except (RuntimeError, MemoryError) as err:
        if not isinstance(err, MemoryError) and not any(w in str(err) for w in OOM_WORDS):
            raise
        out["oom"] = str(err).splitlines()[0][:200]
    out["peak_rss_mb"] = peak_rss_mb()
    out["mb"] = out["peak_rss_mb"] - base
    return out


def timed(step: Callable[[], float], budget: dict[str, Any]) -> dict[str, Any]:
    """Warm-up steps (at least ``warmup`` and ``warmup_s`` seconds), then timed steps (at least
    ``min_steps``, until ``seconds`` have passed, at most ``max_steps``): their median ms."""
    t0 = time.perf_counter()
    loss = step()
    first = time.perf_counter() - t0
    done = 1
    while done < budget["warmup"] or time.perf_counter() - t0 < budget["warmup_s"]:
        step()
        done += 1
    ms: list[float] = []
    t1 = time.perf_counter()
    while len(ms) < budget["min_steps"] or (
        len(ms) < budget["max_steps"] and time.perf_counter() - t1 < budget["seconds"]
    ):
        s0 = time.perf_counter()
        step()
        ms.append(1000 * (time.perf_counter() - s0))
    return {
        "ms": statistics.median(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "steps": len(ms),
        "warmup_steps": done,
        "first_step_s": first,
        "loss": loss,
    }


# The run ----------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T 1024 and 2048 only, few steps")
    ap.add_argument("--sizes", default=None, help="comma-separated T (default 1024..16384)")
    ap.add_argument("--graphs", default=None, help=",".join(GRAPHS) + " (--quick: the first two)")
    ap.add_argument("--levels", default=",".join(LEVELS), help=",".join(LEVELS))
    ap.add_argument("--window", type=int, default=WINDOW, help="w of every graph (128)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--seconds", type=float, default=None, help="timed seconds per case")
    ap.add_argument(
        "--rounds", type=int, default=None,
        help="processes per case, interleaved; the fastest is kept (default 2, --quick 1)",
    )  # fmt: skip
    ap.add_argument("--min-steps", type=int, default=None, help="timed steps at least")
    ap.add_argument("--memory-limit-gb", type=float, default=16.0, help="per case (16)")
    ap.add_argument("--case-timeout", type=float, default=900.0, help="seconds per case (900)")
    ap.add_argument("--in-process", action="store_true", help="no process per case (tests)")
    ap.add_argument("--out", default="bench-results/graph_attention.json")
    args = ap.parse_args(argv)
    sizes = args.sizes or ",".join(map(str, QUICK_SIZES if args.quick else SIZES))
    try:
        args.size_list = sorted({int(s) for s in sizes.split(",") if s})
    except ValueError:
        ap.error(f"--sizes {sizes}: comma-separated positive integers")
    chosen = args.graphs or ",".join(QUICK_GRAPHS if args.quick else GRAPHS)
    args.graph_list = [n for n in chosen.split(",") if n]
    args.level_list = [n for n in args.levels.split(",") if n]
    bad = [n for n in args.graph_list if n not in GRAPHS]
    bad += [n for n in args.level_list if n not in LEVELS]
    if bad or not args.size_list or min(args.size_list) < 1 or args.window < 1:
        ap.error(f"unknown graph or level {bad}, or no positive sizes / window")
    args.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 2)
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: need at least 1")
    args.budget = {
        "warmup": 1,
        "warmup_s": 0.0 if args.quick else 1.0,
        "min_steps": args.min_steps or (2 if args.quick else 3),
        "max_steps": 5 if args.quick else 20,
        "seconds": (0.2 if args.quick else 3.0) if args.seconds is None else args.seconds,
    }
    return args


def run_one(args, level: str, graph: str, t: int, peer: str) -> dict[str, Any]:
    spec = {
        "level": level,
        "graph": graph,
        "window": args.window,
        "t": t,
        "peer": peer,
        "threads": args.threads,
        "seed": 0,
        "budget": args.budget,
        "memory_limit_gb": args.memory_limit_gb,
        "isolated": not args.in_process,
    }
    module = "benchmarks.bench_graph_attention"
    if args.in_process:
        result = execute(module, spec, isolated=False)
    else:
        result = run_isolated(module, spec, timeout=args.case_timeout)
    if "exit status -9" in result.get("error", ""):  # the kernel's OOM killer
        result = {"oom": "killed (SIGKILL: out of memory?)"}
    return result


def fastest(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the lowest median step, with every round's median ("rounds_ms"); the
    first round when none ran."""
    ran = [r for r in results if "ms" in r]
    if not ran:
        return results[0]
    best = min(ran, key=lambda r: r["ms"])
    return {**best, "rounds_ms": [r["ms"] for r in ran]}


def describe(case: dict[str, Any]) -> str:
    if "error" in case:
        return "FAILED " + case["error"]
    if "oom" in case:
        return f"OOM ({case['oom']})"
    kernel = case.get("path") or f"sdpa {case.get('sdpa')}"
    return f"{case['ms']:.1f} ms, {case['mb']:.0f} MB, {kernel}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    env = environment(args.threads)
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}, "
          f"load average {env['load_average'][0]:.2f}", flush=True)  # fmt: skip
    levels: dict[str, Any] = {}
    for level in args.level_list:
        levels[level] = {}
        for graph in args.graph_list:
            g = GRAPHS[graph](args.window)
            rows = []
            for t in args.size_list:
                row: dict[str, Any] = {"t": t, "edges": g.num_edges(t)}
                got: dict[str, list[dict[str, Any]]] = {p: [] for p in PEERS}
                for _ in range(args.rounds):  # interleaved: sparse, dense, sparse, dense, ...
                    for peer in PEERS:
                        t0 = time.perf_counter()
                        got[peer].append(run_one(args, level, graph, t, peer))
                        print(f"  {level} {graph} T={t} {peer}: {describe(got[peer][-1])} "
                              f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
                row.update({peer: fastest(results) for peer, results in got.items()})
                row["ratios"] = compare(row["sparse"], row["dense"])
                rows.append(row)
            res = {"graph": g.spec, "rows": rows}
            res["scaling"], res["goals"] = scaling(rows), goals(rows)
            levels[level][graph] = res
            report(level, res, D_MODEL, N_HEAD)
    summary(levels)
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "graph_attention",
        "environment": env,
        "settings": {
            "d_model": D_MODEL,
            "n_head": N_HEAD,
            "batch": 1,
            "dtype": "float32",
            "window": args.window,
            "sizes": args.size_list,
            "budget": args.budget,
            "rounds": args.rounds,
            "memory_limit_gb": args.memory_limit_gb,
            "isolated": not args.in_process,
        },
        "levels": levels,
    }
    print(f"wrote {write_json(args.out, data)}")
    failed = [
        (lv, gr, r["t"], p)
        for lv, by_graph in levels.items()
        for gr, res in by_graph.items()
        for r in res["rows"]
        for p in PEERS
        if "error" in r[p]
    ]
    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {failed}")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
