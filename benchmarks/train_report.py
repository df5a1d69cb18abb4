"""bench_train's figures and tables: tokens/s and MFU of each case, the ratios against
glassformer (per process and paired), and the printed tables."""

from __future__ import annotations

import statistics
from typing import Any

import torch

from benchmarks.common import Shape, fmt_timing, percent, print_table, ratio
from benchmarks.paired import FAULTS, MATMUL, per_block
from benchmarks.peers import PEERS, SHAPES, glassformer_config
from glassformer.models import DecoderLM


# Derived figures ------------------------------------------------------------------------------
def flops_per_token(shape: Shape) -> int:
    """glassformer's formula (6 N_matmul + 12 L T C), applied to every peer of the shape."""
    with torch.device("meta"):
        return DecoderLM(glassformer_config(shape)).flops_per_token(shape.context)


def derive(result: dict[str, Any], shape: Shape, peak_gflops: float) -> dict[str, Any]:
    """Add tokens/s, MFU and memory above imports to a case's raw result."""
    if "error" in result:
        return result
    flop = flops_per_token(shape) * shape.tokens
    for phase in ("step", "fwd_bwd"):
        seconds = result["timing"][phase]["median_ms"] / 1000
        result[f"tokens_per_s_{phase}"] = shape.tokens / seconds
        result[f"mfu_{phase}"] = flop / seconds / (peak_gflops * 1e9)
    result["flop_per_step"] = flop
    result["rss_above_imports_mb"] = result["peak_rss_mb"] - result["rss_after_import_mb"]
    return result


def ms(result: dict[str, Any], phase: str = "step") -> float | None:
    return None if "error" in result else result["timing"][phase]["median_ms"]


def compare(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, float | None]:
    """speed = peer ms / glassformer ms (> 1: glassformer faster), of the fastest rounds;
    speed_rounds = the same of the medians over all rounds, which a peer whose processes
    scatter widely cannot win by one lucky round;
    memory = glassformer / peer peak RSS above imports (< 1: glassformer smaller)."""

    def div(a, b):
        return None if a is None or not b else a / b  # 0 MB above imports: in-process runs

    def mem(r):  # in one process the RSS may fall below the imports' (freed by earlier work)
        mb = r.get("rss_above_imports_mb")
        return None if mb is None or mb <= 0 else mb

    def rounds(r):
        return statistics.median(r["rounds"]) if r.get("rounds") else None

    return {
        "speed_step": div(ms(peer), ms(ours)),
        "speed_fwd_bwd": div(ms(peer, "fwd_bwd"), ms(ours, "fwd_bwd")),
        "speed_rounds": div(rounds(peer), rounds(ours)),
        "memory": div(mem(ours), mem(peer)),
    }


def report(shapes, scaling, peak: dict[str, float], variants) -> None:
    """Derive the figures against the matmul ``peak`` (GFLOP/s by dtype), add the ratios,
    print the tables."""
    for name, s in shapes.items():
        for r in (*s["results"].values(), *s["reuse"].values()):
            derive(r, SHAPES[name], peak["float32"])
        for v, r in s["variants"].items():
            derive(r, SHAPES[name], peak["bfloat16" if variants[v].get("bf16") else "float32"])
        ours = s["results"]["glassformer"]
        s["ratios"] = {p: compare(ours, r) for p, r in s["results"].items() if p != "glassformer"}
        s["ratios_reuse"] = {p: compare(ours, r) for p, r in s["reuse"].items()}
        print_shape(name, s)
        if s.get("paired") and "error" not in s["paired"]:
            s["paired"]["figures"] = paired_figures(s["paired"], s["flop_per_token"], SHAPES[name])
            print_paired(name, s["paired"])
    for axis, rows in scaling.items():
        for row in rows:
            shape = SHAPES["tiny"].replace(context=row["context"], batch=row["batch"])
            for p in ("glassformer", "hf"):
                if p in row:
                    derive(row[p], shape, peak["float32"])
            if "hf" in row:
                row["speed_step"] = compare(row["glassformer"], row["hf"])["speed_step"]
        if rows:
            print_sweep(axis, rows, [p for p in ("glassformer", "hf") if p in rows[0]])


# Tables ---------------------------------------------------------------------------------------
def print_shape(name: str, s: dict[str, Any]) -> None:
    shape = Shape(**s["shape"])
    ours = s["results"]["glassformer"]
    header = ["peer", "step ms (min-max)", "tok/s", "MFU", "f+b ms (min-max)", "MFU f+b"]
    header += ["RSS MB", "+MB", "faults/step", "speed", "f+b speed", "rounds speed", "memory"]
    rows = []
    for peer, r in s["results"].items():
        c = compare(ours, r) if peer != "glassformer" else {}
        rows.append(_row(PEERS[peer], r, c))
    for peer, r in s["reuse"].items():  # the same malloc setting as glassformer
        rows.append(_row(f"{PEERS[peer]} + reuse", r, compare(ours, r)))
    for variant, r in s["variants"].items():  # speed-up of the variant over eager glassformer
        rows.append(_row(variant, r, compare(r, ours) | {"memory": None}))
    print_table(
        f"TRAINING STEP {name}: {shape.describe()}; "
        f"{s['flop_per_token'] / 1e6:.2f} MFLOP/token x {shape.tokens} tokens",
        header,
        rows,
        [
            "ms: median of the timed steps (min-max) in the fastest of the rounds (one process "
            "each, interleaved); f+b = forward + backward, no AdamW step",
            "MFU: model FLOP/s (glassformer's formula, same for all peers) / matmul peak",
            "RSS MB: peak resident memory of the case's process; +MB: above its imports",
            "faults/step: minor page faults per timed step, fresh pages the allocator mapped "
            "again (a page each, zero-filled by the kernel)",
            "glassformer runs with reuse_freed_memory() (as its trainer does on CPU); "
            "+ reuse: the peer with it too",
            "speed: peer ms / glassformer ms (> 1: glassformer faster); for a variant: "
            "glassformer ms / variant ms (> 1: variant faster)",
            "rounds speed: the same ratio of the step's medians over all rounds (one lucky "
            "process does not decide it)",
            "memory: glassformer +MB / peer +MB (< 1: glassformer smaller)",
        ],
    )


def paired_figures(run: dict[str, Any], flop_per_token: int, shape: Shape) -> dict[str, Any]:
    """Per peer of a paired run: median ms per step and per forward + backward; speed against
    glassformer and MFU against the matmul of the same round, each the median (min, max) over
    rounds of a ratio of block times."""
    blocks = run["blocks"]
    mm = blocks[MATMUL]["step"]
    flop_ratio = flop_per_token * shape.tokens / run["matmul_flop"]
    out: dict[str, Any] = {"peak_gflops": run["matmul_flop"] / statistics.median(mm) / 1e6}
    for peer, b in blocks.items():
        if peer == MATMUL:
            continue
        row: dict[str, Any] = {f"{ph}_ms": statistics.median(b[ph]) for ph in ("step", "fwd_bwd")}
        row["faults_per_step"] = statistics.median(b[FAULTS])
        for phase in ("step", "fwd_bwd"):
            mfu = per_block(mm, b[phase])
            row[f"mfu_{phase}"] = {k: v * flop_ratio for k, v in mfu.items()}
        if peer != "glassformer":
            row["speed"] = per_block(b["step"], blocks["glassformer"]["step"])
            row["speed_fwd_bwd"] = per_block(b["fwd_bwd"], blocks["glassformer"]["fwd_bwd"])
        out[peer] = row
    return out


def print_paired(name: str, run: dict[str, Any]) -> None:
    fig = run["figures"]

    def spread(r, fmt):
        return f"{fmt(r['median'])} ({fmt(r['min'])}-{fmt(r['max'])})"

    rows = []
    for peer in run["blocks"]:
        if peer == MATMUL:
            continue
        f = fig[peer]
        plain = peer.removesuffix("+reuse")
        rows.append(
            [
                PEERS[plain] + (" + reuse" if plain != peer else ""),
                f"{f['step_ms']:.1f}",
                spread(f["mfu_step"], percent),
                f"{f['fwd_bwd_ms']:.1f}",
                spread(f["mfu_fwd_bwd"], percent),
                spread(f["speed"], ratio) if "speed" in f else "-",
                spread(f["speed_fwd_bwd"], ratio) if "speed" in f else "-",
                f"{f['faults_per_step']:.0f}",
            ]
        )
    n = len(run["blocks"][MATMUL]["step"])
    print_table(
        f"PAIRED {name}: each peer in its own process, {n} rounds of one block per peer, "
        f"interleaved; matmul peak in the same rounds {fig['peak_gflops']:.1f} GFLOP/s (median)",
        ["peer", "step ms", "MFU", "f+b ms", "MFU f+b", "speed", "f+b speed", "faults/step"],
        rows,
        [
            "ms: median over rounds of the mean step in a block "
            f"(steps per block: {run['steps_per_block']})",
            "glassformer runs with reuse_freed_memory() (as its trainer does on CPU) unless "
            "--no-reuse-memory; + reuse: the peer with it too",
            "MFU: model FLOP/s / the matmul's FLOP/s in the same round; speed: peer ms / "
            "glassformer ms in the same round (> 1: glassformer faster); each the median "
            "(min-max) over rounds, so a slow spell of the machine slows both terms and cancels",
            "faults/step: minor page faults per step, median over rounds",
        ],
    )


def _row(label: str, r: dict[str, Any], c: dict[str, float | None]) -> list[str]:
    if "error" in r:
        return [label, "failed"] + [""] * 11
    return [
        label,
        fmt_timing(r["timing"]["step"]),
        f"{r['tokens_per_s_step']:.0f}",
        percent(r["mfu_step"]),
        fmt_timing(r["timing"]["fwd_bwd"]),
        percent(r["mfu_fwd_bwd"]),
        f"{r['peak_rss_mb']:.0f}",
        f"{r['rss_above_imports_mb']:.0f}",
        f"{r['faults_per_step']:.0f}",
        ratio(c.get("speed_step")),
        ratio(c.get("speed_fwd_bwd")),
        ratio(c.get("speed_rounds")),
        ratio(c.get("memory")),
    ]


def print_sweep(axis: str, rows: list[dict[str, Any]], pair: list[str]) -> None:
    other = "batch 12" if axis == "context" else "context 64"
    header = [axis]
    for p in pair:
        header += [f"{p} ms", f"{p} tok/s", f"{p} MFU", f"{p} +MB"]
    header += ["speed"] if "hf" in pair else []
    table = []
    for row in rows:
        cells = [str(row[axis])]
        for p in pair:
            r = row[p]
            if "error" in r:
                cells += ["failed", "", "", ""]
                continue
            cells += [
                f"{ms(r):.1f}",
                f"{r['tokens_per_s_step']:.0f}",
                percent(r["mfu_step"]),
                f"{r['rss_above_imports_mb']:.0f}",
            ]
        if "hf" in pair:
            cells.append(ratio(row.get("speed_step")))
        table.append(cells)
    print_table(
        f"SCALING with {axis} (tiny GPT, {other}): full training step",
        header,
        table,
        ["speed: HF ms / glassformer ms (> 1: glassformer faster); +MB: peak RSS above imports"],
    )
