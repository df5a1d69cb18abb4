"""The Benchmarks page's tables: for each benchmark, its markdown tables and the rows of its
bar chart, read from the JSON the benchmark wrote (docs/scripts/benchmark_pages.py draws and
writes them). Every figure comes from the JSON; nothing is typed in here.

A chart: {"rows": [(label, {series: ratio | (median, min, max) | None | why none})],
"panels": [panel]}; a panel: {"xlabel": ..., "series": [names], "lines": [x of lines]}.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

Spread = dict[str, float]  # {"median", "min", "max"} over rounds


# Formatting -------------------------------------------------------------------------------------
def x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def spread(r: Spread | None, fmt: Callable[[float], str] = x) -> str:
    """'median (min-max)'; ratios: '1.23x (1.05-1.40)'."""
    if not r:
        return "-"
    inner = "{:.2f}".format if fmt is x else fmt
    return f"{fmt(r['median'])} ({inner(r['min'])}-{inner(r['max'])})"


def ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.3f}"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def trio(r: Spread | None) -> tuple[float, float, float] | None:
    return None if not r else (r["median"], r["min"], r["max"])


def table(rows: list[dict[str, str]], note: str = "") -> str:
    """A markdown table whose header is the keys of the first row; ``note`` under it."""
    if not rows:
        return "No figures: every case of the run failed.\n"
    lines = [list(rows[0]), ["---"] * len(rows[0]), *(list(r.values()) for r in rows)]
    text = "\n".join("| " + " | ".join(cells) + " |" for cells in lines) + "\n"
    return text + (f"\n{note}\n" if note else "")


def shape_text(sh: dict[str, int]) -> str:
    return f"{sh['n_layer']} × {sh['d_model']}, T {sh['context']}, B {sh['batch']}"


def label(peers: dict[str, str], key: str) -> str:
    """A peer's name; a "+reuse" key: the peer run with reuse_freed_memory()."""
    plain = key.removesuffix("+reuse")
    return peers.get(plain, plain) + (" + reuse" if plain != key else "")


# The run: machine and command -------------------------------------------------------------------
def machine(data: dict[str, Any]) -> str:
    env = data.get("environment", {})
    parts = [env.get("cpu") or "CPU model not recorded"]
    parts += [f"{env['cpus']} CPUs"] if env.get("cpus") else []
    threads = env.get("threads")
    parts += [f"{threads} torch thread{'s' if threads > 1 else ''}"] if threads else []
    names = {"torch": "torch", "transformers": "transformers", "tokenizers": "tokenizers",
             "tiktoken": "tiktoken", "python": "Python"}  # fmt: skip
    parts += [f"{name} {env[key]}" for key, name in names.items() if env.get(key)]
    before = env.get("load_average") or env.get("load_average_before")
    after = env.get("load_average_after")
    if before:
        parts.append(f"load average {before[0]:.2f}" + (f" → {after[0]:.2f}" if after else ""))
    date = data.get("date") or env.get("date")
    parts.append(f"date {date}" if date else "date not recorded")
    return "**Machine:** " + "; ".join(parts) + "."


def command(data: dict[str, Any], default: str) -> str:
    argv = data.get("argv") or data.get("environment", {}).get("argv")
    if argv is not None:
        return f"**Command:** `{default} {shlex.join(argv)}`"
    return f"**Command:** `{default}` (any options it was given are not recorded in the JSON)."


def panel(ratio: str, series=("speed",), who="glassformer", lines=(1.0,)) -> dict[str, Any]:
    return {"xlabel": f"{ratio} (log scale; right of 1: {who})", "series": list(series),
            "lines": list(lines)}  # fmt: skip


def tokenizers(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    t, c = d["train"], d["corpus"]
    speed = t["hf_seconds"] / t["glassformer_seconds"]
    rows = [{"task": f"train to {t['vocab_size']:,} ids ({t['merges']:,} merges), seconds",
             "glassformer": f"{t['glassformer_seconds']:.3f}",
             "peer": f"HF tokenizers ({t['hf_merges']:,} merges)",
             "peer's figure": f"{t['hf_seconds']:.3f}", "speed": x(speed)}]  # fmt: skip
    bars = [("train: HF tokenizers", {"speed": speed})]
    tasks = {"encode_one_string": ("one string", "encode the corpus as one string, MB/s"),
             "encode_batch_of_lines": ("lines", f"encode {c['lines']:,} lines, MB/s")}  # fmt: skip
    for key, (short, task) in tasks.items():
        cold = d[key]["glassformer (cold cache)"]["mb_per_s"]
        warm = d[key].get("glassformer (warm cache)")
        ours = f"{cold:.2f} cold" + (f", {warm['mb_per_s']:.2f} warm" if warm else "")
        ours += " (`encode_batch`)" if short == "lines" else ""
        for peer, r in d[key].items():
            if not peer.startswith("glassformer"):
                rows.append({"task": task, "glassformer": ours, "peer": peer,
                             "peer's figure": f"{r['mb_per_s']:.2f}",
                             "speed": x(cold / r["mb_per_s"])})  # fmt: skip
                bars.append((f"{short}: {peer}", {"speed": cold / r["mb_per_s"]}))
    intro = (f"Corpus: {c['source']}, {c['megabytes']:.2f} MB, {c['lines']:,} lines; best of "
             f"{d['repeat']} runs.\n\n")  # fmt: skip
    note = ("speed = peer time / glassformer time; for encoding, glassformer's figure with a "
            "cold cache (above 1: glassformer faster).")  # fmt: skip
    chart = panel("peer time / glassformer time", who="glassformer faster")
    return intro + table(rows, note), {"rows": bars, "panels": [chart]}


def train(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    peers, rows, paired, sweep, bars, failed = d["peers"], [], [], [], [], []
    for name, s in d["shapes"].items():
        where = f"{name} ({shape_text(s['shape'])})"
        ours, fig = s["results"]["glassformer"], s.get("paired", {}).get("figures", {})
        cases = [(p, r, s.get("ratios", {}).get(p, {})) for p, r in s["results"].items()]
        cases += [(p + "+reuse", r, s.get("ratios_reuse", {}).get(p, {}))
                  for p, r in s.get("reuse", {}).items()]  # fmt: skip
        for v, r in s.get("variants", {}).items():  # speed: glassformer ms / variant ms
            ok = step_ms(r) and step_ms(ours)
            cases.append((v, r, {"speed_step": step_ms(ours) / step_ms(r)} if ok else {}))
        for key, r, c in cases:
            rows.append({"shape": where, "peer": label(peers, key), **train_cells(r, c)})
            if key != "glassformer" and key not in s.get("variants", {}):
                speeds = {"per process": c.get("speed_step"),
                          "paired": trio(fig.get(key, {}).get("speed"))}  # fmt: skip
                bars.append((f"{name}: {label(peers, key)}", speeds))
        for key, f in fig.items():
            if key != "peak_gflops":
                paired.append({"shape": where, "peer": label(peers, key), **paired_cells(f)})
        if "error" in s.get("paired", {}):
            failed.append(f"The paired run of {name} failed: {s['paired']['error']}")
    for axis, values in d.get("scaling", {}).items():
        other = "batch" if axis == "context" else "context"
        for r in values:
            sweep.append({"tiny GPT": f"{axis} {r[axis]} ({other} {r[other]})",
                          "glassformer ms": ms(step_ms(r["glassformer"])),
                          "HF ms": ms(step_ms(r.get("hf"))),
                          "speed": x(r.get("speed_step"))})  # fmt: skip
    text = table(rows, TRAIN_NOTE)
    text += "\n" + table(paired, PAIRED_NOTE) if paired else ""
    text += "\n" + table(sweep, "speed = HF ms / glassformer ms.") if sweep else ""
    text += "".join(f"\n{f}\n" for f in failed)
    chart = panel("peer ms / glassformer ms", ("per process", "paired"), "glassformer faster")
    return text, {"rows": bars, "panels": [chart]}


def train_cells(r: dict[str, Any], c: dict[str, float | None]) -> dict[str, str]:
    """A per-process row of the training table: the case ``r``, its ratios ``c``."""
    if "error" in r:
        return {"step ms": "failed"} | dict.fromkeys(
            ("tokens/s", "MFU", "MFU f+b", "+MB", "speed", "rounds speed", "memory"), ""
        )
    return {
        "step ms": ms(step_ms(r)),
        "tokens/s": f"{r['tokens_per_s_step']:,.0f}",
        "MFU": pct(r["mfu_step"]),
        "MFU f+b": pct(r["mfu_fwd_bwd"]),
        "+MB": f"{r['rss_above_imports_mb']:.0f}",
        "speed": x(c.get("speed_step")),
        "rounds speed": x(c.get("speed_rounds")),
        "memory": x(c.get("memory")),
    }


def paired_cells(f: dict[str, Any]) -> dict[str, str]:
    """A row of a paired training run (also train_nanogpt's): one peer's figures."""
    return {
        "step ms": ms(f["step_ms"]),
        "MFU": spread(f["mfu_step"], pct),
        "f+b ms": ms(f["fwd_bwd_ms"]),
        "speed": spread(f.get("speed")),
        "f+b speed": spread(f.get("speed_fwd_bwd")),
        "faults/step": f"{f['faults_per_step']:.0f}",
    }


TRAIN_NOTE = (
    "One process per case, the fastest of the rounds. step ms: median of the timed steps; "
    "MFU f+b: of forward + backward without the AdamW step; +MB: peak resident memory above "
    "the imports; speed = peer ms / glassformer ms (above 1: glassformer faster; for a "
    "glassformer variant, glassformer ms / variant ms); rounds speed: the same ratio of the "
    "medians over all rounds; memory = glassformer +MB / peer +MB (below 1: glassformer smaller)."
)
PAIRED_NOTE = (
    "Paired run: ms are medians over rounds; MFU is against the matmul of the same round; "
    "speed is the median (min-max) over rounds of peer ms / glassformer ms within a round."
)


def step_ms(r: dict[str, Any] | None) -> float | None:
    return None if not r or "error" in r else r["timing"]["step"]["median_ms"]


def encoder(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    peers, rows, paired, bars, failed = d["peers"], [], [], [], []
    for name, s in d["shapes"].items():
        sh, fig = s["shape"], s.get("paired", {}).get("figures", {})
        for inputs in ("dense", "padded"):
            where = f"{name} ({shape_text(sh)}), {inputs}"
            ours = s["results"]["glassformer"].get(inputs)
            if ours and inputs == "padded":
                where += f" ({100 * ours['real_tokens'] / (sh['batch'] * sh['context']):.0f}% real)"
            for peer, case in s["results"].items():
                c = s.get("ratios", {}).get(peer, {}).get(inputs, {})
                cells = encoder_cells(case.get(inputs), c)
                rows.append({"shape, input": where, "peer": label(peers, peer), **cells})
                if peer != "glassformer":
                    pair = fig.get(f"{peer}/{inputs}", {}).get("speed")
                    speeds = {"per process": c.get("speed"), "paired": trio(pair)}
                    bars.append((f"{name} {inputs}: {label(peers, peer)}", speeds))
        for key, f in fig.items():
            peer, inputs = key.split("/")
            paired.append({"shape, input": f"{name}, {inputs}", "peer": label(peers, peer),
                           "ms": ms(f["ms"]), "speed": spread(f.get("speed")),
                           "speed, both + reuse": spread(f.get("speed_reuse")),
                           "faults/pass": f"{f['faults_per_pass']:.0f}"})  # fmt: skip
        if "error" in s.get("paired", {}):
            failed.append(f"The paired run of {name} failed: {s['paired']['error']}")
    text = table(rows, ENCODER_NOTE)
    text += "\n" + table(paired, PAIRED_NOTE) if paired else ""
    text += "".join(f"\n{f}\n" for f in failed)
    chart = panel("peer ms / glassformer ms", ("per process", "paired"), "glassformer faster")
    return text, {"rows": bars, "panels": [chart]}


def encoder_cells(r: dict[str, Any] | None, c: dict[str, float | None]) -> dict[str, str]:
    """A per-process row of the encoder table: one input of a case, its ratios ``c``."""
    if r is None:
        return {"ms": "failed"} | dict.fromkeys(
            ("tokens/s", "MFU", "+MB", "kernels", "speed", "memory"), ""
        )
    return {
        "ms": ms(r["timing"]["forward"]["median_ms"]),
        "tokens/s": f"{r['tokens_per_s']:,.0f}",
        "MFU": pct(r["mfu"]),
        "+MB": f"{r['rss_above_imports_mb']:.0f}",
        "kernels": "+".join(r["kernels"]) or "-",
        "speed": x(c.get("speed")),
        "memory": x(c.get("memory")),
    }


ENCODER_NOTE = (
    "One forward pass under `torch.no_grad()`, one process per case, the fastest of the rounds. "
    "tokens/s and MFU count real tokens only; +MB: peak resident memory above the imports; "
    "speed = peer ms / glassformer ms (above 1: glassformer faster); memory = glassformer +MB / "
    "peer +MB (below 1: glassformer smaller)."
)


def generation(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rows, bars = [], []
    for r in d["rows"]:
        star = "*" if r["uncached"] == "estimated" else ""
        rows.append({"model": r["model"], "batch": str(r["batch"]),
                     "glassformer + cache, tok/s": f"{r['glassformer_cached_tok_s']:.1f}",
                     "without cache, tok/s": f"{r['glassformer_uncached_tok_s']:.1f}{star}",
                     "HF + cache, tok/s": f"{r['hf_cached_tok_s']:.1f}",
                     "speed vs HF": x(r["cached_over_hf"]),
                     "speed vs no cache": x(r["cached_over_uncached"]) + star,
                     "bandwidth bound, tok/s": f"{r['bandwidth_bound_tok_s']:.1f}",
                     "same tokens": "yes" if r["identical_tokens_vs_hf"] else "no"})  # fmt: skip
        speeds = {"vs HF generate": r["cached_over_hf"], "vs no cache": r["cached_over_uncached"]}
        bars.append((f"{r['model']}, batch {r['batch']}", speeds))
    intro = (
        f"Prompts of {d['prompt_tokens']} tokens, {d['new_tokens']} new tokens, best of "
        f"{d['repeat']}; copy bandwidth {d['copy_bandwidth_bytes_s'] / 1e9:.1f} GB/s.\n\n"
    )
    note = (
        "speed = the other's time / glassformer's time with its cache (above 1: glassformer "
        "with its cache faster); * estimated from the step time at 8 prefix lengths."
    )
    checks = [
        f"{r['model']}, batch {r['batch']}: {r['uncached_estimate_tok_s']:.1f} estimated, "
        f"{r['glassformer_uncached_tok_s']:.1f} measured"
        for r in d["rows"]
        if r.get("uncached_estimate_tok_s") is not None
    ]
    if checks:  # the estimator beside the measured figure
        note += "\n\nEstimated against measured, glassformer without cache (tok/s): "
        note += "; ".join(checks) + "."
    chart = panel("other's time / glassformer's cached time", ("vs HF generate", "vs no cache"),
                  "glassformer with its cache faster")  # fmt: skip
    return intro + table(rows, note), {"rows": bars, "panels": [chart]}


def hooks(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    sh, fig = d["shape"], d["figures"]
    rows = [{"case": c, "ms a pass": ms(f["ms"]), "cache MB": f"{f['cache_mb']:.1f}",
             "time / plain": spread(f["vs_plain"])} for c, f in fig.items()]  # fmt: skip
    bars = [(c, {"time / plain": trio(f["vs_plain"])}) for c, f in fig.items() if f["vs_plain"]]
    rounds = len(next(iter(d["blocks_ms"].values())))
    reuse = ", with `reuse_freed_memory()`" if d.get("reuse_memory") else ""
    intro = (
        f"{sh['name']}: {sh['n_layer']} layers, d_model {sh['d_model']}, {sh['n_head']} heads, "
        f"batch {sh['batch']} × context {sh['context']}; {rounds} paired rounds{reuse}.\n\n"
    )
    note = ("time / plain: the case's time over the plain forward pass's in the same round, "
            "median (min-max) over rounds (above 1: what caching costs); cache MB: the memory "
            "the cached tensors hold.")  # fmt: skip
    return intro + table(rows, note), {"rows": bars, "panels": [panel(
        "case time / plain forward time", ("time / plain",), "caching costs time")]}  # fmt: skip


def fast_paths(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rows, bars, earns = [], [], d["rule"]["earns"]
    for name, r in d["cases"].items():
        row = {"path": r["path"], "shape": r["shape"], "workload": r["workload"]}
        if "error" in r:
            rows.append(row | {"on ms": "-", "off ms": "-", "speed-up": "failed", "rounds": "-",
                               "verdict": r["error"]})  # fmt: skip
            continue
        rows.append(row | {"on ms": ms(r["on_ms"]), "off ms": ms(r["off_ms"]),
                           "speed-up": spread(r["speedup"]), "rounds": str(r["rounds"]),
                           "verdict": r["verdict"]})  # fmt: skip
        bars.append((name, {"off / on": trio(r["speedup"])}))
    note = (f"speed-up: median (min-max) over paired rounds of the reference form's time over "
            f"the fast path's (off / on); a path earns its place at {earns:.2f}x.")  # fmt: skip
    note += "".join(f"\n\n{n}." for n in d.get("notes", []))
    return table(rows, note), {"rows": bars, "panels": [panel(
        "reference time / fast-path time", ("off / on",),
        f"the path is faster; dashed: {earns:g}x", (1.0, earns))]}  # fmt: skip


def graph_attention(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rows, bars, notes, st = [], [], [], d["settings"]

    def cell(c: dict[str, Any], key: str, fmt: Callable[[float], str]) -> str:
        return "OOM" if "oom" in c else fmt(c[key]) if key in c else "failed"

    for level, by_graph in d["levels"].items():
        for res in by_graph.values():
            for r in res["rows"]:
                sp, de, ra = r["sparse"], r["dense"], r["ratios"]
                rows.append({"level": level, "graph": f"`{res['graph']}`", "T": f"{r['t']:,}",
                             "sparse path": sp.get("path", "-"), "sparse ms": cell(sp, "ms", ms),
                             "dense ms": cell(de, "ms", ms), "faster": x(ra["speed"]),
                             "sparse MB": cell(sp, "mb", "{:.0f}".format),
                             "dense MB": cell(de, "mb", "{:.0f}".format),
                             "less memory": x(ra["memory"])})  # fmt: skip
                oom = " and ".join(p for p in ("sparse", "dense") if "oom" in r[p])
                oom = oom and oom + " out of memory"
                both = {"time": ra["speed"] or oom, "memory": ra["memory"] or oom}
                bars.append((f"{level}, {res['graph']}, T {r['t']}", both))
            if s := res.get("scaling"):
                mem = "-" if s["memory"] is None else f"{s['memory']:.2f}x"
                notes.append(f"- {level}, `{res['graph']}`, T = {s['from']:,} to {s['to']:,}: "
                             f"the sparse path's time grew {s['time']:.2f}x and its memory {mem} "
                             "as much as T did")  # fmt: skip
    intro = (f"d_model {st['d_model']}, {st['n_head']} heads, batch {st['batch']}, {st['dtype']}; "
             f"{st['rounds']} round(s) a case, each in a process of its own.\n\n")  # fmt: skip
    note = ("ms: median forward + backward step; MB: peak resident memory above the built "
            "inputs; faster = dense ms / sparse ms, less memory = dense MB / sparse MB (above 1: "
            "the sparse path is faster or smaller).")  # fmt: skip
    note += "\n\nGrowth of the sparse path against linear (1x: linear in T):\n\n" if notes else ""
    note += "\n".join(notes)
    return intro + table(rows, note), {"rows": bars, "panels": [
        panel("dense time / sparse time", ("time",), "the sparse path faster"),
        panel("dense MB / sparse MB", ("memory",), "the sparse path smaller")]}  # fmt: skip


def train_nanogpt(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rows, bars = [], []
    names = {"glassformer": "glassformer", "nanogpt": "nanoGPT", "hf": "HF GPT2 (sdpa)"}
    for name, s in d["shapes"].items():
        if "error" in s["paired"]:
            rows.append({"shape": name, "model": "all", "parameters": "", "step ms": "failed",
                         "MFU": "", "f+b ms": "", "speed": s["paired"]["error"]})  # fmt: skip
        for m, f in s["paired"].get("figures", {}).items():
            if m == "peak_gflops":
                continue
            rows.append({"shape": f"{name} ({shape_text(s['shape'])})", "model": names.get(m, m),
                         "parameters": f"{s['n_params'][m]:,}", "step ms": ms(f["step_ms"]),
                         "MFU": spread(f["mfu_step"], pct), "f+b ms": ms(f["fwd_bwd_ms"]),
                         "speed": spread(f.get("speed"))})  # fmt: skip
            if "speed" in f:
                bars.append((f"{name}: {names.get(m, m)}", {"paired": trio(f["speed"])}))
    intro = f"nanoGPT's `model.py`: SHA-256 `{d['nanogpt']['sha256']}`.\n\n"
    note = ("The three models alternate in one process. ms: medians over rounds; MFU against "
            "the matmul of the same round; speed = model ms / glassformer ms within a round, "
            "median (min-max) over rounds (above 1: glassformer faster).")  # fmt: skip
    return intro + table(rows, note), {"rows": bars, "panels": [panel(
        "model ms / glassformer ms", ("paired",), "glassformer faster")]}  # fmt: skip


def finetune(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    rows, bars = [], []
    for name, s in d["shapes"].items():
        if "error" in s:
            rows.append({"shape": name, "case": "all", "step ms": "failed", "peak MB": "",
                         "trainable": s["error"]})  # fmt: skip
            continue
        f = s["figures"]
        for case, mb in f["memory MB"].items():
            rows.append({"shape": name, "case": case, "step ms": ms(f["ms"].get(case)),
                         "peak MB": f"{mb:,.0f}",
                         "trainable": f"{f['trainable'][case]:,}"})  # fmt: skip
        both = {"ratio": trio(f["full hf / glassformer"])}
        bars.append((f"{name}: full fine-tuning", both))
        speedup = {"ratio": trio(f["lora full / lora"])}
        bars.append((f"{name}: LoRA, full / LoRA", speedup))
        if "lora peft / glassformer" in f:
            bars.append((f"{name}: LoRA, PEFT / glassformer",
                         {"ratio": trio(f["lora peft / glassformer"])}))  # fmt: skip
    note = ("step ms: median over paired rounds of a block's mean step; peak MB: the case's "
            "peak resident set above its imports, each case in a fresh process. The floor: "
            "every weight frozen but the first norm, so the backward pass runs through the "
            "whole model (no adapter can need less).")  # fmt: skip
    for name, s in d["shapes"].items():
        if "error" not in s:
            f = s["figures"]
            note += (f"\n\n{name}: full fine-tuning, Hugging Face / glassformer "
                     f"{spread(f['full hf / glassformer'])}, glassformer MFU "
                     f"{spread(f['full MFU'], pct)}; LoRA, full / LoRA "
                     f"{spread(f['lora full / lora'])}; peak memory LoRA / full "
                     f"{f['lora memory lora / full']:.2f}, the floor / full "
                     f"{f['lora memory floor / full']:.2f}.")  # fmt: skip
    return table(rows, note), {"rows": bars, "panels": [panel(
        "Hugging Face's step / glassformer's; full's / LoRA's", ("ratio",))]}  # fmt: skip


def recurrence(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from benchmark_recurrence import tables  # in a file of its own: this one is long enough

    return tables(d)


def data(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from benchmark_data import tables  # in a file of its own, as recurrence's

    return tables(d)


def patching(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from benchmark_patching import tables  # in a file of its own, as recurrence's

    return tables(d)


BENCHMARKS: dict[str, tuple[str, str, Callable]] = {  # name: (title, command, tables and chart)
    "tokenizers": ("Tokenizers", "python -m benchmarks.bench_tokenizers", tokenizers),
    "train": ("Training step", "python -m benchmarks.bench_train", train),
    "train_nanogpt": (
        "Training step beside nanoGPT",
        "python -m benchmarks.bench_train --nanogpt PATH",
        train_nanogpt,
    ),
    "encoder": ("Encoder inference", "python -m benchmarks.bench_encoder", encoder),
    "generation": ("Generation", "python -m benchmarks.bench_generation", generation),
    "hooks": ("Hook-point overhead", "python -m benchmarks.bench_hooks", hooks),
    "fast_paths": ("CPU fast paths", "python -m benchmarks.bench_fast_paths", fast_paths),
    "finetune": ("Fine-tuning step", "python -m benchmarks.bench_finetune", finetune),
    "graph_attention": (
        "Attention on a graph",
        "python -m benchmarks.bench_graph_attention",
        graph_attention,
    ),
    "recurrence": (
        "Attention against recurrence",
        "python -m benchmarks.bench_recurrence",
        recurrence,
    ),
    "patching": ("Patching grids", "python -m benchmarks.bench_patching", patching),
    "data": ("Data at real size", "python -m benchmarks.bench_data", data),
}
