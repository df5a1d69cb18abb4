"""The matrix-multiply peak that MFU is measured against: GFLOP/s of an n x n matmul (2 n³
FLOPs) in float32 or bfloat16, with the thread count the cases run with, measured before and
after the cases in the same run (and served as one more case of a paired run, paired.py)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

MATMUL_N = 2048  # the paired runs' matmul case: (n x n) @ (n x n)


def matmul_step(n: int = 2048, dtype: str = "float32") -> tuple[Callable[[], object], int]:
    """A step that multiplies two n x n random matrices, and its FLOP count, 2 n³."""
    import torch

    a = torch.randn(n, n, dtype=getattr(torch, dtype))
    b = torch.randn(n, n, dtype=a.dtype)
    out = torch.empty(n, n, dtype=a.dtype)
    return (lambda: torch.mm(a, b, out=out)), 2 * n**3


def matmul_peak(n: int = 2048, repeat: int = 10, dtype: str = "float32") -> dict[str, Any]:
    """GFLOP/s of an n x n matmul (2 n³ FLOPs) with torch's current thread count: the best
    of ``repeat`` timed runs after untimed ones, and their median."""
    step, flop = matmul_step(n, dtype)
    for _ in range(min(3, repeat)):
        step()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {
        "n": n,
        "dtype": dtype,
        "repeat": repeat,
        "gflops": flop / min(times) / 1e9,
        "median_gflops": flop / statistics.median(times) / 1e9,
    }


def best_peak(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The peak for MFU: the better of the measurements before and after the cases (another
    process running during one of them lowers it)."""
    best = max(before, after, key=lambda p: p["gflops"])
    return {**best, "before": before["gflops"], "after": after["gflops"]}


def describe_peak(peak: dict[str, Any]) -> str:
    return (
        f"matmul peak ({peak['n']} x {peak['n']} {peak['dtype']}, best of {peak['repeat']}): "
        f"{peak['gflops']:.1f} GFLOP/s (median {peak['median_gflops']:.1f})"
    )
