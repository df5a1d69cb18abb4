"""Paired timing: several peers in one process, their steps interleaved in short blocks.

On a shared virtual machine the speed of the whole machine drifts over seconds to minutes
(this one's 2048³ matmul peak moved between 110 and 181 GFLOP/s in a day), and a process can
land slow as a whole. Timing each peer in its own process, one after the other, compares
peers measured in different spells. Here every block times a few consecutive steps of each
peer in turn (the order reversed every other block), so the blocks of one round share a
spell, and a ratio of two peers is the median over rounds of the ratio of their block
times: a slow spell lengthens both terms and cancels. A matrix multiply timed as one more
"peer" gives the matmul peak of the same spell, for MFU.

What it cannot remove: the peers share one process, its allocator and its caches, so each
block starts with caches holding the previous peer's tensors, the same for everyone; peak
memory is not measured here (the per-process cases measure it).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

__all__ = ["interleave", "per_block"]

Step = Callable[[], object]  # may return {phase: seconds}


def interleave(
    steps: dict[str, Step],
    seconds: float,
    *,
    min_blocks: int = 5,
    block_s: float = 0.25,
    warmup: int = 2,
) -> dict[str, object]:
    """Run each step function ``warmup`` times, then rounds of one block per peer until
    ``seconds`` have passed and at least ``min_blocks`` rounds are done. A peer's block is
    as many steps as last about ``block_s`` (at least one).

    A step may return the seconds of its phases ({"fwd_bwd": ..}); they are averaged per
    block like the step's own wall time. Returns {"steps_per_block": {peer: k},
    "blocks": {peer: {"step": [ms per step, one per block], phase: [...]}}}."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    per = {
        n: max(1, math.ceil(block_s / max(_block(s, 1)["step"], 1e-9))) for n, s in steps.items()
    }
    names = list(steps)
    blocks: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    t0 = time.perf_counter()
    done = 0
    while done < min_blocks or time.perf_counter() - t0 < seconds:
        for n in names if done % 2 == 0 else names[::-1]:
            for phase, s in _block(steps[n], per[n]).items():
                blocks[n].setdefault(phase, []).append(1000 * s)
        done += 1
    return {"steps_per_block": per, "blocks": blocks}


def per_block(num: list[float], den: list[float]) -> dict[str, float]:
    """The median, min and max over blocks of num[i] / den[i]."""
    r = [a / b for a, b in zip(num, den, strict=True)]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)}


def _block(step: Step, n: int) -> dict[str, float]:
    """Seconds per step over ``n`` steps: the wall time ("step") and the step's own phases."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    for _ in range(n):
        got = step()
        for phase, s in got.items() if isinstance(got, dict) else ():
            phases[phase] = phases.get(phase, 0.0) + s
    wall = time.perf_counter() - t0
    return {"step": wall / n, **{p: s / n for p, s in phases.items() if p != "step"}}
