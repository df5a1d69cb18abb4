"""The tables and verdicts of bench_graph_attention.py: dense / sparse ratios per T, the
sparse path's growth against linear, and the issue's goals at T = 8192."""

from __future__ import annotations

from typing import Any

from benchmarks.common import print_table, ratio

GOAL_T, GOAL_SPEED, GOAL_MEMORY = 8192, 5.0, 10.0
LINEAR, SCALE_FROM = 1.3, 2048  # within 1.3x of linear from 2048 to the largest T


def compare(sparse: dict[str, Any], dense: dict[str, Any]) -> dict[str, Any]:
    """dense / sparse for time and memory (above 1: the sparse path is faster, smaller), and
    how far apart the two losses are (the same computation)."""
    ok = all("ms" in c for c in (sparse, dense))
    if not ok:
        return {"speed": None, "memory": None, "loss_rel_diff": None}
    mem = dense["mb"] / sparse["mb"] if min(sparse["mb"], dense["mb"]) > 0 else None
    diff = abs(sparse["loss"] - dense["loss"]) / max(1.0, abs(dense["loss"]))
    return {"speed": dense["ms"] / sparse["ms"], "memory": mem, "loss_rel_diff": diff}


def scaling(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The sparse path's time and memory growth from SCALE_FROM (or the smallest T) to the
    largest T, divided by the growth of T: 1 is linear."""
    good = [r for r in rows if "ms" in r["sparse"]]
    if len(good) < 2:
        return None
    start = next((r for r in good if r["t"] == SCALE_FROM), good[0])
    end = good[-1]
    if end is start:
        start = good[0]
    k = end["t"] / start["t"]
    time_x = end["sparse"]["ms"] / start["sparse"]["ms"] / k
    a, b = start["sparse"]["mb"], end["sparse"]["mb"]
    mem_x = b / a / k if min(a, b) > 0 else None
    within = time_x <= LINEAR and mem_x is not None and mem_x <= LINEAR
    return {"from": start["t"], "to": end["t"], "time": time_x, "memory": mem_x, "within": within}


def goals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's goals at GOAL_T, and whether dense or sparse ran out of memory anywhere."""
    at = next((r for r in rows if r["t"] == GOAL_T), None)
    out: dict[str, Any] = {"t": GOAL_T, "measured": at is not None}
    if at is not None:
        # dense out of memory where the sparse path ran: both goals met, with no ratio
        won = "oom" in at["dense"] and "ms" in at["sparse"]
        for key, goal in (("speed", GOAL_SPEED), ("memory", GOAL_MEMORY)):
            v = at["ratios"][key]
            out[key] = {"value": v, "goal": goal, "met": won or bool(v and v >= goal)}
    out["dense_oom_at"] = [r["t"] for r in rows if "oom" in r["dense"]]
    out["sparse_oom_at"] = [r["t"] for r in rows if "oom" in r["sparse"]]
    return out


def cell(case: dict[str, Any], key: str, fmt: str) -> str:
    if "oom" in case:
        return "OOM"
    return fmt.format(case[key]) if key in case else "failed"


def report(level: str, res: dict[str, Any], d_model: int, n_head: int) -> None:
    """Print one (level, graph) table with its scaling and goal verdicts."""
    rows = [
        [
            str(r["t"]),
            r["sparse"].get("path", "-"),
            cell(r["sparse"], "ms", "{:.1f}"),
            cell(r["dense"], "ms", "{:.1f}"),
            ratio(r["ratios"]["speed"]),
            cell(r["sparse"], "mb", "{:.0f}"),
            cell(r["dense"], "mb", "{:.0f}"),
            ratio(r["ratios"]["memory"]),
        ]
        for r in res["rows"]
    ]
    notes = ["ms: median fwd+bwd step; MB: peak RSS above the built inputs (dense: its mask too)"]
    s = res["scaling"]
    if s is not None:
        verdict = "met" if s["within"] else "not met"
        mem = "-" if s["memory"] is None else f"{s['memory']:.2f}x"
        notes.append(
            f"sparse scaling {s['from']} -> {s['to']}: time {s['time']:.2f}x of linear, memory "
            f"{mem} of linear (goal within {LINEAR}x): {verdict}"
        )
    gl = res["goals"]
    at_goal = next((r for r in res["rows"] if r["t"] == GOAL_T), None)
    if at_goal is not None:
        for key, word in (("speed", "faster"), ("memory", "less memory")):
            g = gl[key]
            got = "-" if g["value"] is None else f"{g['value']:.1f}x {word}"
            got = "dense out of memory" if "oom" in at_goal["dense"] else got
            verdict = "met" if g["met"] else "NOT met"
            notes.append(f"T={GOAL_T}: {got} (goal >= {g['goal']:.0f}x {word}): {verdict}")
    else:
        notes.append(f"T={GOAL_T} not measured: no verdict on the 5x / 10x goals")
    diffs = [r["ratios"]["loss_rel_diff"] for r in res["rows"]]
    if any(d is not None for d in diffs):
        worst = max(d for d in diffs if d is not None)
        notes.append(f"the two peers' losses agree to {worst:.1e} (relative): the same function")
    if gl["dense_oom_at"] or gl["sparse_oom_at"]:
        notes.append(
            f"out of memory: dense at {gl['dense_oom_at']}, sparse at {gl['sparse_oom_at']}"
        )
    header = ["T", "path", "sparse ms", "dense ms", "faster", "sparse MB", "dense MB", "less mem"]
    print_table(f"{level}: {res['graph']}, d_model {d_model}, {n_head} heads, batch 1, float32",
                header, rows, notes)  # fmt: skip


def summary(levels: dict[str, dict[str, Any]]) -> None:
    """One line per (level, graph): the ratios at GOAL_T and the sparse path's scaling."""

    def x(v: float | None, fmt: str = "{:.1f}x") -> str:
        return "-" if v is None else fmt.format(v)

    rows = []
    for level, by_graph in levels.items():
        for res in by_graph.values():
            gl, s = res["goals"], res["scaling"] or {}
            speed = gl["speed"]["value"] if gl["measured"] else None
            mem = gl["memory"]["value"] if gl["measured"] else None
            largest = res["rows"][-1]
            rows.append(
                [
                    f"{level} {res['graph']}",
                    x(speed),
                    x(mem),
                    x(s.get("time"), "{:.2f}x"),
                    x(s.get("memory"), "{:.2f}x"),
                    f"{largest['t']}: " + ("OOM" if "oom" in largest["dense"] else "ran"),
                ]
            )
    header = ["level, graph", f"faster @{GOAL_T}", f"less mem @{GOAL_T}", "time/linear",
              "memory/linear", "dense at the largest T"]  # fmt: skip
    notes = [
        f"goals: >= {GOAL_SPEED:.0f}x faster and >= {GOAL_MEMORY:.0f}x less memory at "
        f"T={GOAL_T}; time and memory within {LINEAR}x of linear from {SCALE_FROM} to the "
        "largest T"
    ]
    print_table("summary: sparse against dense masked attention", header, rows, notes)
