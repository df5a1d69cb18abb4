"""The tables and chart rows of the recurrence benchmark (benchmarks/bench_recurrence.py), read
from its JSON: the layers' times per step and per token with their sequential steps, maximum
path length and multiply-adds, and the merged projection against one per head. Every figure
comes from the JSON; benchmark_tables.py registers it."""

from __future__ import annotations

from typing import Any

from benchmark_tables import ms, panel, spread, table, trio

LAYERS = {"attention": "attention", "torch-mha": "torch.nn attention", "lstm": "LSTM",
          "gru": "GRU"}  # fmt: skip
NAMES = {**LAYERS, "merged": "merged", "per-head": "per-head"}
SERIES = "time ratio"


def per_token(us: float) -> str:
    return f"{us:.2f}" if us < 10 else f"{us:.1f}"


def layer_text(name: str, part: dict[str, Any]) -> str:
    """'attention: `module`, causal, 263,168 parameters'."""
    mask = f", {part['mask']}" if "mask" in part else ""
    return f"{NAMES[name]}: `{part['module']}`{mask}, {part['params']:,} parameters"


def tables(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    st, parts = d["settings"], d["parts"]
    rounds = sorted({r["rounds"] for r in [*d["rows"], *d["projection_rows"]]})
    rounds_text = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}-{rounds[-1]}"
    layers = "; ".join(layer_text(n, parts[n]) for n in LAYERS if n in parts)
    intro = (
        f"Forward + backward, float32, d_model {st['d_model']}, {st['n_head']} heads, batch "
        f"{st['batch']}; {rounds_text} paired rounds at each T. {layers}.\n\n"
    )
    rows, bars = [], []
    for row in d["rows"]:
        for name, c in row["cases"].items():
            rows.append({
                "T": f"{row['t']:,}", "layer": NAMES[name], "ms a step": ms(c["ms"]),
                "µs a token": per_token(c["us_per_token"]),
                "sequential steps": f"{c['sequential_steps']:,}",
                "max path length": f"{c['max_path_length']:,}",
                "MAC a token": f"{c['macs_per_token']:,}",
                "time / attention": spread(c["vs_attention"]),
            })  # fmt: skip
            if c["vs_attention"]:
                bars.append((f"{NAMES[name]} / attention, T {row['t']}",
                             {SERIES: trio(c["vs_attention"])}))  # fmt: skip
    note = (
        "ms a step: median over rounds of a block's mean step; µs a token: that over B × T; "
        "sequential steps: the steps that must run one after another; max path length: the "
        "steps between an input and an output at another position; MAC a token: forward "
        "multiply-adds per token (causal attention: over the (T + 1) / 2 keys a query sees "
        "on average); time / attention: the layer's block time over attention's in the same "
        "round, median (min-max) over rounds (above 1: attention faster)."
    )
    text = intro + table(rows, note)
    prows = []
    for row in d["projection_rows"]:
        for name, c in row["cases"].items():
            prows.append({
                "T": f"{row['t']:,}", "projection": NAMES[name],
                "matmuls": str(parts[name]["matmuls"]),
                "parameters": f"{parts[name]['params']:,}", "ms a step": ms(c["ms"]),
                "time / merged": spread(c["vs_merged"]),
            })  # fmt: skip
            if c["vs_merged"]:
                bars.append((f"per-head / merged projection, T {row['t']}",
                             {SERIES: trio(c["vs_merged"])}))  # fmt: skip
    pnote = (
        f"merged: `{parts['merged']['module']}`; per-head: `{parts['per-head']['module']}`. "
        "time / merged: per-head's block time over merged's in the same round, median "
        "(min-max) over rounds (above 1: the merged projection faster)."
    )
    text += "\n" + table(prows, pnote)
    chart = panel("recurrent layer's time / attention's; per-head's / merged's", (SERIES,),
                  "attention, merged faster")  # fmt: skip
    return text, {"rows": bars, "panels": [chart]}
