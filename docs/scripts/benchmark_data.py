"""The tables and chart rows of the data benchmark (benchmarks/bench_data.py), read from its
JSON: each peer's first and second run at each corpus size (time to the first step, peak memory
of its process tree, bytes on disk; "-" for a run a peer has not: the floor, the tokenizers
library alone, has no second run), and the data path's goals checked against those figures. A
row carried from an earlier run (bench_data.py --keep) names that run's date and CPU, and so
does a goal that reads it. Every figure comes from the JSON; benchmark_tables.py registers it."""

from __future__ import annotations

from typing import Any

from benchmark_tables import panel, table

GLASSFORMER = ("glassformer-char", "glassformer-bpe", "glassformer-hf")
FLOOR = "tokenizers-alone"  # the tokenizers library alone: the floor of the tokenizer.json path


def gib(mb: float) -> str:
    return f"{mb / 1024:.2f}"


def secs(s: float) -> str:
    return f"{s:,.0f}" if s >= 100 else f"{s:.1f}"


def earlier(r: dict[str, Any]) -> str:
    """'earlier run, 2026-11-28, <cpu>' for a carried row, else ''."""
    old = r.get("carried")
    if not old:
        return ""
    return f"earlier run, {(old.get('date') or 'undated')[:10]}, {old.get('cpu') or 'CPU unknown'}"


def name(r: dict[str, Any]) -> str:
    """The peer's label, with the earlier run it comes from when carried."""
    return r["label"] + (f" ({earlier(r)})" if r.get("carried") else "")


def carried(*rows: dict[str, Any]) -> str:
    """' (X at SIZE, Y at SIZE: earlier run, date, cpu; ...)' naming the carried ones of
    ``rows`` (each once), grouped by the run they come from; '' when none is carried."""
    groups: dict[str, list[str]] = {}  # earlier run: the rows from it
    for r in rows:
        what = f"{r['label']} at {r['size']}"
        if r.get("carried") and what not in groups.setdefault(earlier(r), []):
            groups[earlier(r)].append(what)
    old = [f"{', '.join(whats)}: {run}" for run, whats in groups.items() if whats]
    return f" ({'; '.join(old)})" if old else ""


def runs(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The row's runs: first and second, or the first alone (the floor)."""
    return [run for run in (r["first"], r.get("second")) if run]


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
        row = {"size": r["size"], "peer": name(r)}
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
        bpt, second = r.get("bytes_per_token"), r.get("second")
        out.append(
            row
            | {
                "first run s": secs(r["first"]["ready_s"]),
                "first GiB": gib(r["first"]["peak_rss_mb"]),
                "second run s": secs(second["ready_s"]) if second else "-",
                "second GiB": gib(second["peak_rss_mb"]) if second else "-",
                "on disk MB": f"{r['cache_bytes'] / 1e6:,.1f}",
                "bytes a token": "-" if bpt is None else f"{bpt:.2f}",
            }
        )
    note = (
        "first run: nothing cached; second run: what the first left on disk. s: from the start "
        "of the command to the end of its first training step (HF datasets, which does not "
        "train: to the end of the preparation; nanoGPT's first run: prepare.py's time + "
        "train.py's to its first step; its second run: train.py alone). The tokenizers library "
        "alone: the floor, the time it takes to encode the corpus with the same tokenizer.json "
        "into a token file on all cores, and nothing else; it caches nothing, so has no second "
        "run (-). GiB: the peak resident memory of the command and all its processes. On disk: "
        "the token files (HF datasets: its Arrow cache, the text and the ids). A peer followed "
        "by an earlier run's date and CPU: that row is carried from that run's results."
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
        who = a["label"]
        peak = max(run["peak_rss_mb"] for run in runs(b))
        base = max(run["peak_rss_mb"] for run in runs(a))
        grow = (peak - base) / 1024
        lines.append(
            f"{who}: peak memory {gib(base)} GiB at {small}, {gib(peak)} GiB at "
            f"{large}: {grow:+.2f} GiB, {verdict(grow <= g['memory_flat_gib'])}{carried(a, b)}"
        )
        ours = b["first"]["ready_s"]
        ng = by.get((large, "nanogpt"))
        if ng:
            theirs = ng["first"]["ready_s"]
            lines.append(
                f"{who}: first run at {large} {secs(ours)} s, nanoGPT's prepare + "
                f"first step {secs(theirs)} s: {verdict(ours <= theirs)}{carried(b, ng)}"
            )
        floor = by.get((large, FLOOR)) if p == "glassformer-hf" else None
        if floor:
            least = floor["first"]["ready_s"]
            lines.append(
                f"{who}: the tokenizers library alone encodes the corpus at {large} in "
                f"{secs(least)} s on these cores: glassformer's first run, {secs(ours)} s, is "
                f"{100 * (ours / least - 1):.0f}% above this floor; nanoGPT's prepare.py "
                f"encodes with tiktoken, a faster encoder of the same tokenizer{carried(b, floor)}"
            )
        if a.get("second") and b.get("second"):
            late = b["second"]["ready_s"] - a["second"]["ready_s"]
            lines.append(
                f"{who}: second run at {large} {secs(b['second']['ready_s'])} s, at "
                f"{small} {secs(a['second']['ready_s'])} s: {late:+.1f} s, "
                f"{verdict(late <= g['second_run_s'])}{carried(a, b)}"
            )
        bpt = b.get("bytes_per_token")
        if bpt is not None:
            lines.append(
                f"{who}: {bpt:.2f} bytes a token on disk at {large}, "
                f"{verdict(bpt <= g['bytes_per_token'])}{carried(b)}"
            )
    head = (
        f"**Goals**: peak memory at {large} within {g['memory_flat_gib']} GiB of "
        f"{small}; the first run at {large} at most nanoGPT's prepare + first step; a second run "
        f"within {g['second_run_s']:.0f} s of one at {small}; {g['bytes_per_token']:.0f} bytes a "
        "token on disk. A figure carried from an earlier run says so.\n\n"
    )
    return head + ("".join(f"- {line}\n" for line in lines) or "No glassformer figures.\n")


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def chart(sizes: list[str], by: dict) -> dict[str, Any]:
    """Bars of a peer's time over glassformer's at each size, first and second run (the floor,
    against glassformer's tokenizer.json path: the first run alone)."""
    bars = []
    peers = (("nanogpt", "nanoGPT"), ("hf-datasets", "HF datasets"), (FLOOR, "tokenizers alone"))
    for size in sizes:
        for p in GLASSFORMER:
            ours = by.get((size, p))
            if not ours:
                continue
            for peer, short in peers:
                theirs = by.get((size, peer))
                if not theirs or (peer == FLOOR and p != "glassformer-hf"):
                    continue
                ratio = {
                    f"{run} run": theirs[run]["ready_s"] / ours[run]["ready_s"]
                    if theirs.get(run) and ours.get(run)
                    else f"no {run} run"
                    for run in ("first", "second")
                }
                old = " (earlier run)" if ours.get("carried") or theirs.get("carried") else ""
                bars.append((f"{ours['label']} vs {short}, {size}{old}", ratio))
    return {
        "rows": bars,
        "panels": [
            panel("peer's time / glassformer's", ("first run", "second run"), "glassformer sooner")
        ],
    }
