"""The tables and chart rows of the data benchmark (benchmarks/bench_data.py), read from its
JSON: each peer's first and second run at each corpus size (time to the first step, peak memory
of its process tree, bytes on disk), and the data path's goals checked against those figures. Every
figure comes from the JSON; benchmark_tables.py registers it."""

from __future__ import annotations

from typing import Any

from benchmark_tables import panel, table

GLASSFORMER = ("glassformer-char", "glassformer-bpe", "glassformer-hf")


def gib(mb: float) -> str:
    return f"{mb / 1024:.2f}"


def secs(s: float) -> str:
    return f"{s:,.0f}" if s >= 100 else f"{s:.1f}"


def tables(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    st, rows = d["settings"], d["rows"]
    by = {(r["size"], r["peer"]): r for r in rows if "error" not in r}
    m = st["model"]
    intro = (
        f"Generated English-like text (`benchmarks/data_corpus.py`) of {', '.join(st['sizes'])}; "
        f"one training step of a {m['n_layer']}-layer model (d_model {m['d_model']}, context "
        f"{m['context']}, batch {m['batch']}) for every peer that trains; tokenizer.json: "
        f"byte-level BPE of {st['hf_vocab']:,} ids; best of {st['rounds']} round(s).\n\n"
    )
    out = []
    for r in rows:
        row = {"size": r["size"], "peer": r["label"]}
        if "error" in r:
            out.append(
                row
                | {
                    "first run s": "failed",
                    "first GiB": "",
                    "second run s": "",
                    "second GiB": "",
                    "on disk MB": "",
                    "bytes a token": r["error"],
                }
            )
            continue
        bpt = r.get("bytes_per_token")
        out.append(
            row
            | {
                "first run s": secs(r["first"]["ready_s"]),
                "first GiB": gib(r["first"]["peak_rss_mb"]),
                "second run s": secs(r["second"]["ready_s"]),
                "second GiB": gib(r["second"]["peak_rss_mb"]),
                "on disk MB": f"{r['cache_bytes'] / 1e6:,.1f}",
                "bytes a token": "-" if bpt is None else f"{bpt:.2f}",
            }
        )
    note = (
        "first run: nothing cached; second run: what the first left on disk. s: from the start "
        "of the command to the end of its first training step (HF datasets, which does not "
        "train: to the end of the preparation; nanoGPT's first run: prepare.py's time + "
        "train.py's to its first step; its second run: train.py alone). GiB: the peak resident "
        "memory of the command and all its processes. On disk: the token files (HF datasets: "
        "its Arrow cache, the text and the ids)."
    )
    text = intro + table(out, note) + "\n" + goals(d, by)
    return text, chart(st["sizes"], by)


def goals(d: dict[str, Any], by: dict) -> str:
    """The goals, each with the figures that meet it or not."""
    g, sizes = d["settings"]["goals"], d["settings"]["sizes"]
    small, large = sizes[0], sizes[-1]
    lines = []
    for p in GLASSFORMER:
        a, b = by.get((small, p)), by.get((large, p))
        if not (a and b):
            continue
        name = a["label"]
        peak = max(b["first"]["peak_rss_mb"], b["second"]["peak_rss_mb"])
        base = max(a["first"]["peak_rss_mb"], a["second"]["peak_rss_mb"])
        grow = (peak - base) / 1024
        lines.append(
            f"{name}: peak memory {gib(base)} GiB at {small}, {gib(peak)} GiB at "
            f"{large}: {grow:+.2f} GiB, {verdict(grow <= g['memory_flat_gib'])}"
        )
        ng = by.get((large, "nanogpt"))
        if ng:
            ours, theirs = b["first"]["ready_s"], ng["first"]["ready_s"]
            lines.append(
                f"{name}: first run at {large} {secs(ours)} s, nanoGPT's prepare + "
                f"first step {secs(theirs)} s: {verdict(ours <= theirs)}"
            )
        late = b["second"]["ready_s"] - a["second"]["ready_s"]
        lines.append(
            f"{name}: second run at {large} {secs(b['second']['ready_s'])} s, at "
            f"{small} {secs(a['second']['ready_s'])} s: {late:+.1f} s, "
            f"{verdict(late <= g['second_run_s'])}"
        )
        bpt = b.get("bytes_per_token")
        if bpt is not None:
            lines.append(
                f"{name}: {bpt:.2f} bytes a token on disk at {large}, "
                f"{verdict(bpt <= g['bytes_per_token'])}"
            )
    head = (
        f"**Goals**: peak memory at {large} within {g['memory_flat_gib']} GiB of "
        f"{small}; the first run at {large} at most nanoGPT's prepare + first step; a second run "
        f"within {g['second_run_s']:.0f} s of one at {small}; {g['bytes_per_token']:.0f} bytes a "
        "token on disk.\n\n"
    )
    return head + ("".join(f"- {line}\n" for line in lines) or "No glassformer figures.\n")


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def chart(sizes: list[str], by: dict) -> dict[str, Any]:
    """Bars of a peer's time over glassformer's at each size, first and second run."""
    bars = []
    for size in sizes:
        for p in GLASSFORMER:
            ours = by.get((size, p))
            if not ours:
                continue
            for peer, short in (("nanogpt", "nanoGPT"), ("hf-datasets", "HF datasets")):
                theirs = by.get((size, peer))
                if theirs:
                    ratio = {
                        run: theirs[run]["ready_s"] / ours[run]["ready_s"]
                        for run in ("first", "second")
                    }
                    bars.append(
                        (
                            f"{ours['label']} vs {short}, {size}",
                            {"first run": ratio["first"], "second run": ratio["second"]},
                        )
                    )
    return {
        "rows": bars,
        "panels": [
            panel("peer's time / glassformer's", ("first run", "second run"), "glassformer sooner")
        ],
    }
