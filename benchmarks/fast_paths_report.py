"""The table ``bench_fast_paths`` prints: each path's on and off times, its speed-up over
paired rounds and its verdict against the 5% a fast path must earn, and the re-lay note."""

from __future__ import annotations

from typing import Any

from benchmarks.common import print_table

__all__ = ["EARNS", "SPREAD", "print_report", "relay_note", "verdict"]

EARNS = 1.05  # the speed-up a fast path must reach
SPREAD = 0.02  # a median this close to EARNS, with rounds on both sides: inside the spread


def verdict(speed: dict[str, float]) -> str:
    s, lo, hi = speed["median"], speed["min"], speed["max"]
    if lo < EARNS < hi and abs(s - EARNS) <= SPREAD:
        return "inside the spread"
    return "earns" if s >= EARNS else "does not"


def relay_note(r: dict[str, Any]) -> str:
    relay, even = r["relay_ms"], r["break_even_steps"]
    repaid = "never repaid (no step saved)" if even is None else f"repaid after {even:.0f} steps"
    return (
        f"layout: re-laying the weights (enter + exit) {relay['median']:.1f} ms "
        f"(min {relay['min']:.1f}, max {relay['max']:.1f}), {repaid}"
    )


def print_report(results: dict[str, dict[str, Any]], notes: list[str], elapsed: float) -> None:
    rows = []
    for r in results.values():
        head = [r["path"], r["shape"], r["workload"]]
        if "error" in r:
            rows.append([*head, "-", "-", "-", "-", "-", "FAILED"])
            continue
        s = r["speedup"]
        rows.append([*head, f"{r['on_ms']:.2f}", f"{r['off_ms']:.2f}", f"{s['median']:.3f}x",
                     f"{s['min']:.2f}-{s['max']:.2f}", str(r["rounds"]), r["verdict"]])  # fmt: skip
    print_table(
        f"fast paths on vs off (the reference form), paired rounds, {elapsed:.0f} s",
        ["path", "shape", "workload", "on ms", "off ms", "speed-up", "min-max", "rounds",
         "verdict"],
        rows,
        [
            "on, off: median ms a pass; speed-up: median over rounds of off / on (min-max)",
            f"verdict: 'inside the spread' if min < {EARNS} < max and the median is within",
            f"  {EARNS} +- {SPREAD}; else 'earns' if the median >= {EARNS}, 'does not' below",
            *notes,
        ],
    )  # fmt: skip
