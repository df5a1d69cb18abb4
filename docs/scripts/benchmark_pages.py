"""Tables and bar charts of the Benchmarks page, made from the benchmarks' JSON.

Reads ``<results>/<name>.json`` (default docs/benchmarks/results: copies of what
``python -m benchmarks`` writes to bench-results/) and writes into ``<out>`` (default
docs/benchmarks/generated), for every benchmark in BENCHMARKS:

* ``<name>.md``: the machine and the command of the run, tables of its figures with the ratios
  against glassformer as the benchmark defines them, and the chart, for docs/benchmarks.md to
  include with pymdownx.snippets; for a benchmark with no JSON, a note saying so;
* ``<name>-tables.md``: the same without the chart, for a page elsewhere in the docs (a
  concept page showing a benchmark's figures) to include;
* ``<name>.png``: a bar chart of those ratios on a log scale, with a line at 1;
* ``missing.md``: the benchmarks with no JSON in this build;
* with ``--readme``, the results table of README.md (one line per benchmark), between its
  BEGIN and END markers.

The output depends on the JSON alone: no figure is typed in here.

    python docs/scripts/benchmark_pages.py [--results DIR] [--out DIR] [--only NAMES] [--readme]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path
from benchmark_tables import BENCHMARKS, command, machine

ROOT = Path(__file__).resolve().parents[2]
IMAGES = "benchmarks/generated/"  # the PNGs' path as seen from docs/benchmarks.md


# Charts -----------------------------------------------------------------------------------------
COLORS = ["#3b6ea5", "#e08a2c", "#5a9e4b", "#a05195"]
NICE = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1,
        1.1, 1.25, 1.5, 2, 3, 4, 5, 10, 20, 50, 100, 200, 500, 1000]  # fmt: skip


def draw(chart: dict[str, Any], path: Path, title: str) -> None:
    """Horizontal bars from 1 to each ratio on a log axis, rows top to bottom, one panel per
    entry of ``chart["panels"]``; a (median, min, max) value gets a min-max whisker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    rows, panels = chart["rows"], chart["panels"]
    k_max = max(len(p["series"]) for p in panels)
    size = (3 + 4 * len(panels), 1.3 + len(rows) * (0.22 * k_max + 0.15))
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False, figsize=size)
    for ax, p in zip(axes[0], panels, strict=True):
        k, seen = len(p["series"]), [1.0, *p["lines"]]
        for j, name in enumerate(p["series"]):
            for i, (_, values) in enumerate(rows):
                y, v = i + (j - (k - 1) / 2) * 0.8 / k, values.get(name)
                if v is None or isinstance(v, str):  # no ratio; a string says why
                    ax.text(1.0, y, f" {v or 'n/a'}", va="center", fontsize=7, color="gray")
                    continue
                mid, lo, hi = v if isinstance(v, tuple) else (v, v, v)
                ax.barh(y, mid - 1.0, left=1.0, height=0.72 / k, color=COLORS[j % len(COLORS)],
                        label=name if i == 0 else None)  # fmt: skip
                if hi > lo:
                    ax.errorbar(mid, y, xerr=[[mid - lo], [hi - mid]], fmt="none", ecolor="black",
                                elinewidth=0.7, capsize=2)  # fmt: skip
                right = mid >= 1
                ax.text(max(mid, hi) if right else min(mid, lo), y, f" {mid:.2f}x ",
                        va="center", ha="left" if right else "right", fontsize=7)  # fmt: skip
                seen += [lo, hi]
        for line in p["lines"]:
            ax.axvline(line, color="black", lw=1, ls="-" if line == 1.0 else "--")
        lo = min(math.log(min(seen)), -math.log(1.25))
        hi = max(math.log(max(seen)), math.log(1.25))
        lo, hi = lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo)  # room for the labels
        ax.set_xscale("log")
        ax.set_xlim(math.exp(lo), math.exp(hi))
        ticks = log_ticks(lo, hi)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{t:g}x" for t in ticks])
        ax.set_xlabel(p["xlabel"], fontsize=8)
        ax.grid(axis="x", color="#dddddd", lw=0.5)
        ax.set_axisbelow(True)
        if k > 1:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    axes[0][0].set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    for ax in axes[0]:
        ax.tick_params(axis="x", labelsize=8)
    axes[0][0].set_ylim(len(rows) - 0.5, -0.5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of NICE between exp(lo) and exp(hi), 1 among them, at least (hi - lo) / 8 apart
    in log space."""
    ticks = [1.0]
    for side in (NICE[NICE.index(1) + 1 :], NICE[: NICE.index(1)][::-1]):
        last = 1.0
        for t in side:
            if lo <= math.log(t) <= hi and abs(math.log(t / last)) >= (hi - lo) / 8:
                ticks.append(t)
                last = t
    return sorted(ticks)


# The README's results table ------------------------------------------------------------------
README = ROOT / "README.md"
BEGIN = "<!-- results: written by docs/scripts/benchmark_pages.py --readme; do not edit -->"
END = "<!-- /results -->"
# name: (what the ratios say, the chart series to read first, which chart rows to summarise)
SUMMARY: dict[str, tuple[str, tuple[str, ...], Callable[[str], bool]]] = {
    "tokenizers": ("byte-level BPE, peer time / glassformer time", ("speed",), lambda r: True),
    "train": ("training step, peer ms / glassformer ms", ("paired", "per process"),
              lambda r: "reuse" not in r),
    "train_nanogpt": ("training step in one process, model ms / glassformer ms", ("paired",),
                      lambda r: "glassformer" not in r),
    "encoder": ("encoder inference, peer ms / glassformer ms", ("paired", "per process"),
                lambda r: True),
    "generation": ("cached generation, HF time / glassformer time", ("vs HF generate",),
                   lambda r: True),
    "hooks": ("hook points, run_with_cache time / plain forward time (the cost of looking)",
              ("time / plain",), lambda r: True),
    "fast_paths": ("CPU fast paths, reference time / fast time", ("off / on",),
                   lambda r: True),
    "finetune": ("fine-tuning step, time ratio (HF / glassformer; full / LoRA; PEFT / glassformer)",
                 ("ratio",), lambda r: True),
    "graph_attention": ("attention on a graph at T 8192, dense / sparse", ("time", "memory"),
                        lambda r: r.endswith("T 8192")),
    "recurrence": ("attention against recurrence, LSTM or GRU time / attention time; "
                   "per-head projections / merged", ("time ratio",),
                   lambda r: r.endswith((" T 64", " T 4096")) or "projection" in r),
    "patching": ("patching grids, TransformerLens time / glassformer time",
                 ("TL / glassformer",), lambda r: True),
    "data": ("data at real size, time to the first step, nanoGPT's way / glassformer's, "
             "first run", ("first run",), lambda r: "nanoGPT" in r),
}  # fmt: skip


def ratio_text(v: Any) -> str | None:
    """A chart value as text: '1.23x' (a median when the value is a spread), else None."""
    if isinstance(v, tuple):
        v = v[0]
    return f"{v:.2f}x" if isinstance(v, int | float) else None


def summary(results: Path) -> str:
    """The README's results table: one line per benchmark with results in ``results``."""
    lines = [
        "| benchmark, ratio (above 1: glassformer ahead) | results | command |",
        "| --- | --- | --- |",
    ]
    for name, (what, prefer, keep) in SUMMARY.items():
        src = results / f"{name}.json"
        if not src.exists():  # a benchmark not run yet: its line says so
            lines.append(f"| {what} | to be measured | `{BENCHMARKS[name][1]}` |")
            continue
        _, chart = BENCHMARKS[name][2](json.loads(src.read_text(encoding="utf-8")))
        cells = []
        for row, values in chart["rows"]:
            found = [(s, ratio_text(values.get(s))) for s in prefer if ratio_text(values.get(s))]
            if keep(row) and found:
                both = len(prefer) > 1 and name == "graph_attention"
                text = ", ".join(f"{s} {t}" for s, t in found) if both else found[0][1]
                cells.append(f"{row} {text}")
        lines.append(f"| {what} | {'; '.join(cells) or 'failed'} | `{BENCHMARKS[name][1]}` |")
    runs = {n: json.loads((results / f"{n}.json").read_text(encoding="utf-8")) for n in SUMMARY
            if (results / f"{n}.json").exists()}  # fmt: skip
    recorded = [(n, d) for n, d in runs.items() if d.get("environment", {}).get("cpu")]
    recorded.sort(key=lambda nd: "threads" not in nd[1]["environment"])  # torch's settings first
    if recorded:  # the machine, as the first benchmark that names its CPU recorded it
        first = recorded[0][1]
        lines += ["", machine(first).replace("**Machine:**", "Machine:")]
        cpu = first["environment"]["cpu"]
        others = [(n, d["environment"]["cpu"]) for n, d in recorded]
        others = [(n, c) for n, c in others if c != cpu]
        if others:  # a benchmark re-run on another machine says so
            where = "; ".join(f"{SUMMARY[n][0].split(',')[0]}: {c}" for n, c in others)
            lines.append(f"Measured on another machine: {where} (see each benchmark's page).")
    return "\n".join(lines) + "\n"


def write_readme(results: Path, readme: Path = README) -> str:
    """Replace the table between BEGIN and END in ``readme``; return the new text."""
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} block to fill")
    head, rest = text.split(BEGIN, 1)
    new = head + BEGIN + "\n" + summary(results) + END + rest.split(END, 1)[1]
    readme.write_text(new, encoding="utf-8")
    return new


# Driver -----------------------------------------------------------------------------------------
def render(name: str, results: Path, out: Path) -> None:
    """Write ``<name>.md`` and ``<name>.png`` into ``out``; with no JSON, a note only."""
    title, default, make = BENCHMARKS[name]
    src, png, md = results / f"{name}.json", out / f"{name}.png", out / f"{name}.md"
    png.unlink(missing_ok=True)
    if not src.exists():
        note = (f'!!! note "No results"\n    `{name}.json` is not in this build\'s '
                f"results: run `{default}` to make it.\n")  # fmt: skip
        for path in (md, out / f"{name}-tables.md"):
            path.write_text(note, encoding="utf-8")
        return
    data = json.loads(src.read_text(encoding="utf-8"))
    text, chart = make(data)
    parts = [machine(data), command(data, default), text]
    tables = "\n\n".join(p.strip() for p in parts) + "\n"  # for other pages: no chart
    (out / f"{name}-tables.md").write_text(tables, encoding="utf-8")
    if chart["rows"]:
        draw(chart, png, title)
        parts.append(f"![{name}: bar chart of the ratios in the table]({IMAGES}{name}.png)")
    md.write_text("\n\n".join(p.strip() for p in parts) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> list[str]:
    """Render every benchmark (or ``--only`` some); return the benchmarks with no JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "docs/benchmarks/results")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/generated")
    ap.add_argument("--only", default=None, help="comma-separated: " + ",".join(BENCHMARKS))
    ap.add_argument("--readme", action="store_true", help="also rewrite README.md's results")
    args = ap.parse_args(argv)
    names = list(BENCHMARKS) if args.only is None else [n for n in args.only.split(",") if n]
    if unknown := [n for n in names if n not in BENCHMARKS]:
        ap.error(f"unknown benchmark {unknown}: choose from {list(BENCHMARKS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        render(name, args.results, args.out)
    missing = [n for n in BENCHMARKS if not (args.results / f"{n}.json").exists()]
    listing = "".join(f"- `{n}`: not in this build's results\n" for n in missing)
    head = "Benchmarks whose sections below show no table:\n\n"
    (args.out / "missing.md").write_text(
        head + listing if missing else "Every benchmark has results in this build.\n", "utf-8"
    )
    if args.readme:
        write_readme(args.results)
    print(f"wrote {args.out}: {', '.join(names)}; no results for {missing or 'none'}")
    return missing


if __name__ == "__main__":
    main(sys.argv[1:])
