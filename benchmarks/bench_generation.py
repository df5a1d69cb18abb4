"""Benchmark: glassformer generation with and without its KV cache, against Hugging Face
``generate(use_cache=True)``, side by side on the same weights.

Models (random weights, built offline): a Hugging Face GPT-2 of each shape, converted to a
glassformer DecoderLM with ``from_huggingface`` so both libraries run identical weights.

    tiny        4 layers, d_model 128, 4 heads, vocabulary 256, context 512
    gpt2-small  12 layers, d_model 768, 12 heads, vocabulary 50257, context 1024 (124M)

For each model, batch 1 and batch 8 prompts of 16 tokens continue greedily for 256 new tokens
(no <EOS>: every run makes all of them). tokens/s = batch × new tokens / wall time of the whole
call (prompt included), the best of ``--repeat`` runs after a warm-up. Greedy tokens of both
libraries are compared (they should be identical).

Uncached glassformer recomputes the whole prefix at every step, O(n²): measured in full for the
tiny model; for GPT-2 small (≈10-25 min at batch 8 on 2 cores) it is *estimated* by timing
the forward pass at 8 prefix lengths and integrating over all 256 (checked against the
measured figure on the tiny model), unless ``--full-uncached``.

Memory-bandwidth bound: a cached step must read every weight once and the K/V cache of the
batch (2 · layers · B · context · d_model floats); with the copy bandwidth measured in the same
run (a 256 MiB tensor copied, read + write bytes / time) that gives at most
B · bandwidth / bytes-per-step tokens/s. Only meaningful when the weights do not fit in the CPU
caches (GPT-2 small, 0.5 GB; not the tiny model, 3 MB).

    .venv/bin/python benchmarks/bench_generation.py            # full: ≈5-10 min on 2 cores
    .venv/bin/python benchmarks/bench_generation.py --quick    # 64 new tokens, 1 repeat

Prints a table with ratios and writes bench-results/generation.json. Other processes on the
machine distort CPU timings: the load average is printed and recorded; repeat when it is high.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_generation.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import when_and_where
from benchmarks.generation_report import print_header, print_notes, print_row
from glassformer.generation import DecoderSession, generate

PROMPT = 16
SHAPES = {
    "tiny": dict(n_layer=4, n_embd=128, n_head=4, vocab_size=256, n_positions=512),
    "gpt2-small": dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024),
}


def build_pair(shape: str):
    """(Hugging Face GPT2LMHeadModel, glassformer DecoderLM) with the same random weights."""
    import transformers

    from glassformer.interop.huggingface import from_huggingface

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(**SHAPES[shape])).eval()
    hf.generation_config.eos_token_id = None
    hf.generation_config.pad_token_id = 0
    return hf, from_huggingface(hf).eval()


def timed(fns: dict[str, Callable[[int], Any]], new: int, repeat: int) -> dict[str, tuple]:
    """Wall and CPU (process) times of ``repeat`` calls ``fn(new)`` of each function, taken in
    turns (so that a burst of load from other processes hits all of them alike), after an
    untimed short warm-up call ``fn(8)`` each; with the last result of each."""
    results = {name: fn(min(8, new)) for name, fn in fns.items()}
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = fn(new)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (wall[name], cpu[name], results[name]) for name in fns}


def copy_bandwidth(n_bytes: int = 256 * 2**20, repeat: int = 5) -> float:
    """Bytes per second moved by a large tensor copy (each byte read once and written once)."""
    src = torch.ones(n_bytes // 4)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = min(_time(lambda: dst.copy_(src)) for _ in range(repeat))
    return 2 * n_bytes / best


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bytes_per_step(model, batch: int, context: float) -> float:
    """Bytes a cached decoding step reads: every weight once (a tied matrix once; the token
    embedding lookup reads only B rows, but the tied unembedding reads it all) + K and V of
    ``context`` positions per layer and row."""
    c = model.config
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    kv = 2 * c.n_layer * batch * context * c.d_model * 4
    return weights + kv


def uncached_estimate(model, batch: int, new: int, points: int = 8) -> float:
    """Seconds for ``new`` uncached greedy steps: the time of one uncached step (the session
    ``generate(use_cache=False)`` runs, the prefix recomputed, argmax taken) measured at
    ``points`` prefix lengths in [PROMPT, PROMPT + new - 1] and interpolated over all."""
    lengths = [round(PROMPT + i * (new - 1) / (points - 1)) for i in range(points)]
    ids = torch.randint(5, model.config.vocab_size, (batch, PROMPT + new))
    cost = {}
    with torch.inference_mode():
        for n in lengths:
            session = DecoderSession(model, ids[:, : n - 1], None, 1, use_cache=False)
            step = partial(_one_step, session, n, ids[:, n - 1])
            step()  # warm-up at this length
            cost[n] = min(_time(step) for _ in range(2))
    total = 0.0
    for a, b in itertools.pairwise(lengths):
        for n in range(a, b):
            total += cost[a] + (cost[b] - cost[a]) * (n - a) / (b - a)
    return total + cost[lengths[-1]]


def _one_step(session: DecoderSession, n: int, tokens: torch.Tensor) -> torch.Tensor:
    """The uncached step that makes the sequence n tokens long (repeatable)."""
    session.length = n - 1
    return session.step(tokens).argmax(-1)


def bench_model(
    shape: str, batches: list[int], new: int, repeat: int, full_uncached: bool, bandwidth: float
) -> list[dict[str, Any]]:
    """One row per batch size; each row is printed as soon as it is measured."""
    hf, ours = build_pair(shape)
    rows = []
    for batch in batches:
        g = torch.Generator().manual_seed(batch)
        ids = torch.randint(5, SHAPES[shape]["vocab_size"], (batch, PROMPT), generator=g)

        def glass(n: int, cache: bool = True, ids=ids):
            return generate(
                ours, ids, max_new_tokens=n, temperature=0, eos_id=(), use_cache=cache
            ).sequences

        def hugging(n: int, ids=ids):
            with torch.inference_mode():
                return hf.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=n,
                    min_new_tokens=n,
                    do_sample=False,
                    use_cache=True,
                )

        runs = timed({"cached": glass, "hf": hugging}, new, repeat)
        (t_cached, c_cached, seq_ours), (t_hf, c_hf, seq_hf) = runs["cached"], runs["hf"]
        measure_uncached = full_uncached or shape == "tiny"
        if measure_uncached:
            unc = timed({"u": partial(glass, cache=False)}, new, max(1, repeat - 1))["u"]
            t_uncached, c_uncached, seq_unc = unc
            uncached_note = "measured"
            assert torch.equal(seq_unc, seq_ours), "uncached tokens differ from cached"
        else:
            t_uncached, uncached_note = [uncached_estimate(ours, batch, new)], "estimated"
            c_uncached = []
        # check the estimator where the real figure is known
        estimate = uncached_estimate(ours, batch, new) if measure_uncached else None
        tokens = batch * new
        bw_context = PROMPT + new / 2  # mean context over the run
        row = {
            "model": shape,
            "batch": batch,
            "new_tokens": new,
            "glassformer_cached_tok_s": tokens / min(t_cached),
            "glassformer_uncached_tok_s": tokens / min(t_uncached),
            "uncached": uncached_note,
            "uncached_estimate_tok_s": None if estimate is None else tokens / estimate,
            "hf_cached_tok_s": tokens / min(t_hf),
            "times_s": {"cached": t_cached, "uncached": t_uncached, "hf": t_hf},
            "cpu_times_s": {"cached": c_cached, "uncached": c_uncached, "hf": c_hf},
            "cpu_cached_over_hf": min(c_hf) / min(c_cached),
            "cpu_cached_over_uncached": min(c_uncached) / min(c_cached) if c_uncached else None,
            "identical_tokens_vs_hf": bool(torch.equal(seq_ours, seq_hf)),
            "bytes_per_step": bytes_per_step(ours, batch, bw_context),
        }
        row["bandwidth_bound_tok_s"] = batch * bandwidth / row["bytes_per_step"]
        row["cached_over_hf"] = row["glassformer_cached_tok_s"] / row["hf_cached_tok_s"]
        row["cached_over_uncached"] = (
            row["glassformer_cached_tok_s"] / row["glassformer_uncached_tok_s"]
        )
        print_row(row)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="64 new tokens, 1 repeat")
    ap.add_argument("--new-tokens", type=int, default=None, help="default 256 (64 with --quick)")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs, best kept (default 3)")
    ap.add_argument(
        "--models", default="tiny,gpt2-small", help="comma-separated: " + ",".join(SHAPES)
    )
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--full-uncached", action="store_true", help="measure GPT-2 uncached in full")
    ap.add_argument("--out", default="bench-results/generation.json")
    args = ap.parse_args(argv)
    new = args.new_tokens or (64 if args.quick else 256)
    repeat = args.repeat or (1 if args.quick else 3)
    if args.threads:
        torch.set_num_threads(args.threads)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in SHAPES]
    if unknown:
        ap.error(f"unknown model {unknown}: allowed {list(SHAPES)}")
    import transformers

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        **when_and_where(),
    }
    print(
        f"torch {env['torch']}, transformers {env['transformers']}, {env['threads']} threads, "
        f"load average {env['load_average_before'][0]:.2f}; {new} new tokens, best of {repeat}"
    )
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth: {bandwidth / 1e9:.1f} GB/s (read + write)\n")
    print_header()
    rows = []
    batches = [int(b) for b in args.batches.split(",")]
    for shape in models:
        rows.extend(bench_model(shape, batches, new, repeat, args.full_uncached, bandwidth))
    print_notes(rows)
    env["load_average_after"] = os.getloadavg()
    result = {
        "environment": env,
        "copy_bandwidth_bytes_s": bandwidth,
        "new_tokens": new,
        "prompt_tokens": PROMPT,
        "repeat": repeat,
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
