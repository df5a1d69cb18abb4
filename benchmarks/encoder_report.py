"""bench_encoder's figures and tables: tokens/s and MFU of each case, the ratios against
glassformer (per process and paired), and the printed tables."""

from __future__ import annotations

from typing import Any

import torch

from benchmarks.common import Shape, fmt_timing, percent, print_table, ratio
from benchmarks.encoder_peers import INPUTS, PEERS, glassformer_config
from glassformer.models import EncoderModel


def flops_per_token(shape: Shape) -> float:
    """Forward FLOPs per token: glassformer's training formula / 3, for every peer."""
    with torch.device("meta"):
        return EncoderModel(glassformer_config(shape)).flops_per_token(shape.context) / 3


def derive(case: dict[str, Any], shape: Shape, peak_gflops: float) -> dict[str, Any]:
    if "error" in case:
        return case
    per_token = flops_per_token(shape)
    for name in INPUTS:
        r = case.get(name)
        if r is None:
            continue
        seconds = r["timing"]["forward"]["median_ms"] / 1000
        r["tokens_per_s"] = r["real_tokens"] / seconds
        r["mfu"] = per_token * r["real_tokens"] / seconds / (peak_gflops * 1e9)
        r["rss_above_imports_mb"] = r["peak_rss_mb"] - r["rss_after_import_mb"]
    return case


def ms(r: dict[str, Any]) -> float:
    return r["timing"]["forward"]["median_ms"]


def compare(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per input: speed = peer ms / glassformer ms (> 1: glassformer faster); memory =
    glassformer / peer peak RSS above imports (< 1: glassformer smaller)."""
    out = {}
    for name in INPUTS:
        a, b = ours.get(name), peer.get(name)
        if a is None or b is None:
            out[name] = {"speed": None, "memory": None}
            continue
        out[name] = {
            "speed": ms(b) / ms(a),
            "memory": a["rss_above_imports_mb"] / b["rss_above_imports_mb"]
            if b["rss_above_imports_mb"] > 0
            else None,  # in-process runs: the peak may not grow
        }
    return out


def print_paired(name: str, run: dict[str, Any]) -> None:
    rows = []
    for case, f in run["figures"].items():
        peer, inputs = case.split("/")
        plain = peer.removesuffix("+reuse")
        label = PEERS[plain] + (" + reuse" if plain != peer else "")
        faults = f"{f['faults_per_pass']:.0f}"
        rows.append([label, inputs, f"{f['ms']:.1f}", faults, _spread(f.get("speed"))])
        rows[-1] += [_spread(f.get("speed_reuse"))] if "speed_reuse" in f else []
    rounds = len(next(iter(run["blocks"].values()))["step"])
    header = ["peer", "input", "ms", "faults/pass", "speed (min-max)"]
    notes = [
        f"ms: median over rounds of the mean forward pass in a block (passes per block: "
        f"{run['steps_per_block']})",
        "faults/pass: minor page faults per forward pass, median over rounds",
        "speed: peer ms / glassformer ms on the same input in the same round (> 1: "
        "glassformer faster), median (min-max) over rounds",
    ]
    if any("speed_reuse" in f for f in run["figures"].values()):
        header.append("vs glassformer + reuse")
        notes.append(
            "+ reuse: reuse_freed_memory() called in that process; the last column compares "
            "the peer + reuse with glassformer + reuse"
        )
    print_table(
        f"PAIRED {name}: each (peer, input) in its own process, {rounds} rounds of one block "
        "each, interleaved",
        header,
        [row + [""] * (len(header) - len(row)) for row in rows],
        notes,
    )


def _spread(r: dict[str, float] | None) -> str:
    return "-" if r is None else f"{ratio(r['median'])} ({r['min']:.2f}-{r['max']:.2f})"


def print_shape(name: str, s: dict[str, Any]) -> None:
    shape = Shape(**s["shape"])
    ours = s["results"]["glassformer"]
    header = ["peer", "input", "ms (min-max)", "tok/s", "MFU", "RSS MB", "+MB", "faults/pass"]
    header += ["kernels", "speed", "memory"]
    rows = []
    for inputs in INPUTS:
        for peer, case in s["results"].items():
            r = case.get(inputs)
            if r is None:
                rows.append([PEERS[peer], inputs, "failed"] + [""] * 8)
                continue
            real = r["real_tokens"] / shape.tokens
            c = compare(ours, case)[inputs] if peer != "glassformer" else {}
            rows.append(
                [
                    PEERS[peer],
                    inputs if inputs == "dense" else f"padded {100 * real:.0f}%",
                    fmt_timing(r["timing"]["forward"]),
                    f"{r['tokens_per_s']:.0f}",
                    percent(r["mfu"]),
                    f"{r['peak_rss_mb']:.0f}",
                    f"{r['rss_above_imports_mb']:.0f}",
                    f"{r['faults_per_step']:.0f}",
                    "+".join(r["kernels"]) or "-",
                    ratio(c.get("speed")),
                    ratio(c.get("memory")),
                ]
            )
    print_table(
        f"ENCODER INFERENCE {name}: {shape.describe()}; "
        f"{s['flop_per_token'] / 1e6:.2f} MFLOP/token (forward)",
        header,
        rows,
        [
            "ms: one forward pass under torch.no_grad(), median of the timed runs (min-max) in "
            "the fastest of the rounds (one process each, interleaved)",
            "tok/s and MFU count real tokens (padded: the % of real tokens shown); MFU = model "
            "FLOP/s (glassformer's formula for all peers) / matmul peak",
            "RSS MB: peak resident memory of the case's process; +MB: above its imports",
            "faults/pass: minor page faults per timed pass, fresh pages the allocator mapped "
            "again (a page each, zero-filled by the kernel)",
            "kernels: sdpa = scaled_dot_product_attention, fast = torch.nn's fused encoder "
            "layer, nested = padding packed into nested tensors, packed = glassformer's "
            "real-token packing (fast/packing.py)",
            "speed: peer ms / glassformer ms on the same input (> 1: glassformer faster); "
            "memory: glassformer +MB / peer +MB (< 1: glassformer smaller)",
        ],
    )
