"""The tables and chart rows of the patching benchmark (benchmarks/bench_patching.py), read from
its JSON: each grid's corrupted runs and whole-grid times in glassformer and TransformerLens,
and TransformerLens's time over glassformer's per paired round. Every figure comes from the
JSON; benchmark_tables.py registers it."""

from __future__ import annotations

from typing import Any

from benchmark_tables import ms, panel, spread, table, trio

CALLS = {  # grid: (glassformer's call, TransformerLens's patching function)
    "resid_pre": ("patch_residual", "get_act_patch_resid_pre"),
    "head_z": ("patch_heads", "get_act_patch_attn_head_out_all_pos"),
    "blocks": ("patch_blocks", "get_act_patch_block_every"),
    "heads_every": ("patch_heads_every", "get_act_patch_attn_head_all_pos_every"),
    "path_q": ("patch_path_receivers((0, 0))", "get_act_patch_direct_path(0, 0, 'q')"),
    "subset": ("patch_residual(layers=…, positions=…)", "get_act_patch_resid_pre(index_df=…)"),
    "direct": ("patch_path_senders()", "a hook adding each head's write to the final stream"),
}
SERIES = "TL / glassformer"


def tables(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    sh = d["shape"]
    intro = (
        f"{sh['name']} ({sh['family']}): {sh['n_layer']} layers, d_model {sh['d_model']}, "
        f"{sh['n_head']} heads, vocabulary {sh['vocab']:,}, batch {sh['batch']} × context "
        f"{sh['context']}; {d['rounds']} paired rounds.\n\n"
    )
    rows, bars = [], []
    for grid, f in d["figures"].items():
        ours, theirs = CALLS[grid]
        rows.append({
            "grid": grid, "glassformer": f"`{ours}`", "TransformerLens": f"`{theirs}`",
            "runs": f"{f['runs']:,}", "glassformer ms": ms(f["glassformer_ms"]),
            "TL ms": ms(f["transformer_lens_ms"]), SERIES: spread(f["speed"]),
        })  # fmt: skip
        bars.append((grid, {SERIES: trio(f["speed"])}))
    note = (
        "runs: the cells of the grid (a corrupted forward pass each in TransformerLens); ms: "
        "the whole grid, its clean run "
        "included, median over rounds; TL / glassformer: TransformerLens's grid time over "
        "glassformer's in the same round, median (min-max) over rounds (above 1: glassformer "
        "faster)."
    )
    chart = panel("TransformerLens's grid time / glassformer's", (SERIES,), "glassformer faster")
    return intro + table(rows, note), {"rows": bars, "panels": [chart]}
