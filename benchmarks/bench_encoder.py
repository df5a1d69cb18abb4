"""Benchmark: encoder inference (eval mode, torch.no_grad()) of glassformer's EncoderModel
against torch.nn.TransformerEncoder's fast path and Hugging Face BertModel.

Shapes (float32, random token data), all in BERT's layout (post-norm, gelu, embedding norm,
token-type embedding, pooler, no dropout):

    tiny        4 layers, d_model 128, 4 heads, context 64, batch 16, vocabulary 1000
    bert-base   12 layers, d_model 768, 12 heads, context 128, batch 8, vocabulary 30522

Peers, built from the same shape:

    glassformer  EncoderModel (attention_mask: 1 = real token)
    torch.nn     embeddings + nn.TransformerEncoder (batch_first, enable_nested_tensor=True)
                 + pooler: in eval without grad it takes the fused fast path, and with a
                 src_key_padding_mask it packs the real tokens into nested tensors
    hf           transformers.BertModel, attn_implementation="sdpa"

Each peer runs twice on the same batch: "dense" (no padding, no mask) and "padded" (row
lengths drawn in [T/4, T], the first row full, and a padding mask). tokens/s and MFU count
the real tokens only; FLOPs per token are glassformer's formula (forward = training / 3) for
every peer. Each (peer, shape) runs in its own subprocess (peak RSS per case; see common.py).
Then a paired run keeps every (peer, input) waiting in a process of its own and asks each in
turn for a short block of forward passes (paired.py, ``--paired-seconds``), so that its
ratios compare passes timed in the same spell of a noisy machine.
"kernels" records whether the fused paths ran (from one profiled forward): "sdpa"
(scaled_dot_product_attention), "fast" (torch.nn's fused encoder layer), "nested" (padding
packed away).

    .venv/bin/python -m benchmarks.bench_encoder            # about 2 minutes on 2 cores
    .venv/bin/python -m benchmarks.bench_encoder --quick    # tiny shape only: seconds

Prints a table with ratios glassformer / peer and writes bench-results/encoder.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.config import ModelConfig
from glassformer.models import EncoderModel

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_encoder.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import (
    Budget,
    Shape,
    add_common_args,
    best_of_rounds,
    best_peak,
    environment,
    execute,
    fastest,
    finish_args,
    fmt_timing,
    matmul_peak,
    measure,
    percent,
    preload_torch,
    print_header,
    print_table,
    ratio,
    rss_mb,
    write_json,
)

SHAPES = {
    "tiny": Shape(n_layer=4, n_head=4, d_model=128, context=64, batch=16, vocab=1000),
    "bert-base": Shape(n_layer=12, n_head=12, d_model=768, context=128, batch=8, vocab=30522),
}
PEERS = {"glassformer": "glassformer", "torch.nn": "torch.nn fast path", "hf": "HF BertModel"}
INPUTS = ("dense", "padded")
KERNELS = {  # profiler op name -> short label
    "aten::scaled_dot_product_attention": "sdpa",
    "aten::_transformer_encoder_layer_fwd": "fast",
    "aten::_nested_tensor_from_mask": "nested",
    "aten::index_copy_": "packed",  # glassformer's nn/packing.py: padding skipped
}


# Models ---------------------------------------------------------------------------------------
def glassformer_config(shape: Shape) -> ModelConfig:
    return ModelConfig(
        family="encoder",
        vocab_size=shape.vocab,
        max_len=shape.context,
        d_model=shape.d_model,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        activation="gelu",
        norm_first=False,
        norm_eps=1e-12,
        embed_norm=True,
        type_vocab_size=2,
        pooler=True,
        dropout=0.0,
    )


def build_glassformer(shape: Shape):
    model = EncoderModel(glassformer_config(shape))
    return model, lambda ids, mask: model(ids, mask)


def build_hf(shape: Shape):
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.d_model,
        num_hidden_layers=shape.n_layer,
        num_attention_heads=shape.n_head,
        intermediate_size=4 * shape.d_model,
        max_position_embeddings=shape.context,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attn_implementation="sdpa",
    )
    model = transformers.BertModel(config)
    return model, lambda ids, mask: model(input_ids=ids, attention_mask=mask)


def build_torch(shape: Shape):
    model = TorchEncoder(shape)
    return model, lambda ids, mask: model(ids, None if mask is None else mask == 0)


class TorchEncoder(nn.Module):
    """BERT's layout from torch.nn parts: token + position + token-type (0) embeddings,
    LayerNorm, nn.TransformerEncoder (post-norm, gelu), pooler tanh(W h_0 + b).
    forward(ids, padding) with padding (B, T) True at padded positions (torch.nn's rule)."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        c = shape.d_model
        self.tok = nn.Embedding(shape.vocab, c)
        self.pos = nn.Embedding(shape.context, c)
        self.segment = nn.Embedding(2, c)
        self.norm = nn.LayerNorm(c, eps=1e-12)
        layer = nn.TransformerEncoderLayer(
            c, shape.n_head, 4 * c, dropout=0.0, activation="gelu", batch_first=True,
            layer_norm_eps=1e-12,
        )  # fmt: skip
        self.layers = nn.TransformerEncoder(layer, shape.n_layer, enable_nested_tensor=True)
        self.pooler = nn.Linear(c, c)
        for p in self.parameters():  # the deep-copied layers would otherwise start equal
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids: torch.Tensor, padding: torch.Tensor | None = None):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos.weight[:t] + self.segment.weight[0]  # (B, T, C)
        h = self.layers(self.norm(x), src_key_padding_mask=padding)  # (B, T, C)
        return h, self.pooler(h[:, 0]).tanh()


BUILDERS = {"glassformer": build_glassformer, "hf": build_hf, "torch.nn": build_torch}


def make_batch(shape: Shape, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids (B, T) and an attention mask (B, T), 1 = real: lengths in [T/4, T], the
    first row full."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=g)
    low = max(1, shape.context // 4)
    lengths = torch.randint(low, shape.context + 1, (shape.batch,), generator=g)
    lengths[0] = shape.context
    mask = (torch.arange(shape.context) < lengths[:, None]).long()  # (B, T)
    return ids, mask


# One case (runs in a subprocess) --------------------------------------------------------------
def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["peer"] == "hf":
        import transformers.models.bert.modeling_bert  # noqa: F401  (counted in the baseline)
    preload_torch()
    base = rss_mb()
    shape = Shape(**spec["shape"])
    model, forward = BUILDERS[spec["peer"]](shape)
    model.eval()
    ids, mask = make_batch(shape, spec.get("seed", 0))
    out: dict[str, Any] = {"rss_after_import_mb": base}
    for name in spec["inputs"]:
        m = mask if name == "padded" else None

        def step(m=m) -> dict[str, float]:
            t0 = time.perf_counter()
            with torch.no_grad():
                forward(ids, m)
            return {"forward": time.perf_counter() - t0}

        out[name] = measure(step, Budget(**spec["budget"]))
        out[name]["real_tokens"] = int(mask.sum()) if name == "padded" else ids.numel()
        out[name]["rss_after_import_mb"] = base
    for name in spec["inputs"]:  # after the timing: the profiler's buffers stay resident
        out[name]["kernels"] = kernels_used(
            lambda n=name: forward(ids, mask if n == "padded" else None)
        )
    return out


def make_paired_step(spec: dict[str, Any]):
    """One no-grad forward of ``spec["peer"]`` on ``spec["input"]`` (dense or padded), for the
    paired run (paired.py)."""
    preload_torch()
    shape = Shape(**spec["shape"])
    model, forward = BUILDERS[spec["peer"]](shape)
    model.eval()
    ids, mask = make_batch(shape, spec.get("seed", 0))
    m = mask if spec["input"] == "padded" else None

    def step() -> None:
        with torch.no_grad():
            forward(ids, m)

    return step


def kernels_used(call) -> list[str]:
    """Which of KERNELS one no-grad call runs (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    names = {e.key for e in prof.key_averages()}
    return [label for op, label in KERNELS.items() if op in names]


# Driver ---------------------------------------------------------------------------------------
def flops_per_token(shape: Shape) -> float:
    """Forward FLOPs per token: glassformer's training formula / 3, for every peer."""
    with torch.device("meta"):
        return EncoderModel(glassformer_config(shape)).flops_per_token(shape.context) / 3


def derive(case: dict[str, Any], shape: Shape, peak_gflops: float) -> dict[str, Any]:
    if "error" in case:
        return case
    per_token = flops_per_token(shape)
    for name in INPUTS:
        r = case.get(name)
        if r is None:
            continue
        seconds = r["timing"]["forward"]["median_ms"] / 1000
        r["tokens_per_s"] = r["real_tokens"] / seconds
        r["mfu"] = per_token * r["real_tokens"] / seconds / (peak_gflops * 1e9)
        r["rss_above_imports_mb"] = r["peak_rss_mb"] - r["rss_after_import_mb"]
    return case


def ms(r: dict[str, Any]) -> float:
    return r["timing"]["forward"]["median_ms"]


def compare(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per input: speed = peer ms / glassformer ms (> 1: glassformer faster); memory =
    glassformer / peer peak RSS above imports (< 1: glassformer smaller)."""
    out = {}
    for name in INPUTS:
        a, b = ours.get(name), peer.get(name)
        if a is None or b is None:
            out[name] = {"speed": None, "memory": None}
            continue
        out[name] = {
            "speed": ms(b) / ms(a),
            "memory": a["rss_above_imports_mb"] / b["rss_above_imports_mb"]
            if b["rss_above_imports_mb"] > 0
            else None,  # in-process runs: the peak may not grow
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, SHAPES, PEERS, "bench-results/encoder.json")
    args = ap.parse_args(argv)
    finish_args(ap, args, SHAPES, PEERS)
    torch.set_num_threads(args.threads)
    env = environment(args.threads)
    before = matmul_peak(repeat=args.repeat)
    print_header(env, {"float32": before})
    shapes: dict[str, Any] = {}
    for name in args.names:
        shapes[name] = {
            "shape": dataclasses.asdict(SHAPES[name]),
            "flop_per_token": flops_per_token(SHAPES[name]),
            "results": best_of_rounds(
                lambda p, shape=SHAPES[name]: run(p, shape, args), args.peer_list, args.rounds,
                merge_rounds,
            ),
        }  # fmt: skip
    after = matmul_peak(repeat=args.repeat)
    peak = best_peak(before, after)
    print(f"matmul peak after the cases: {after['gflops']:.1f} GFLOP/s\n")
    for name, s in shapes.items():
        for case in s["results"].values():
            derive(case, SHAPES[name], peak["gflops"])
        ours = s["results"]["glassformer"]
        s["ratios"] = {p: compare(ours, c) for p, c in s["results"].items() if p != "glassformer"}
        print_shape(name, s)
        if args.paired_seconds > 0 and len(args.peer_list) > 1:
            s["paired"] = run_paired(SHAPES[name], args)
            if "error" not in s["paired"]:
                print_paired(name, s["paired"])
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "encoder",
        "environment": env,
        "matmul_peak": {"float32": peak},
        "budget": dataclasses.asdict(args.budget),
        "rounds": args.rounds,
        "peers": {p: PEERS[p] for p in args.peer_list},
        "shapes": shapes,
    }
    out = write_json(args.out, data)
    print(f"wrote {out}")
    failed = sum("error" in c for s in shapes.values() for c in s["results"].values())
    failed += sum("error" in s.get("paired", {}) for s in shapes.values())
    if failed:
        raise SystemExit(f"{failed} case(s) failed")
    return data


def merge_rounds(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One case from its rounds: for each input, the round with the fastest median."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[0]
    return {**ok[0], **{n: fastest(ok, "forward", part=n) for n in INPUTS if n in ok[0]}}


def run(peer: str, shape: Shape, args) -> dict[str, Any]:
    """One (peer, shape), both inputs, in its own process unless --in-process."""
    spec = {
        "peer": peer,
        "shape": dataclasses.asdict(shape),
        "inputs": list(INPUTS),
        "threads": args.threads,
        "seed": 0,
        "budget": dataclasses.asdict(args.budget),
    }
    t0 = time.perf_counter()
    result = execute("benchmarks.bench_encoder", spec, not args.in_process)
    where = f"{shape.n_layer} layers, context {shape.context}, batch {shape.batch}"
    if "error" in result:
        print(f"  {peer:12s} {where}: FAILED {result['error']}", flush=True)
    else:
        times = ", ".join(
            f"{n} {result[n]['timing']['forward']['median_ms']:.1f} ms" for n in INPUTS
        )
        print(f"  {peer:12s} {where}: {times} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return result


def run_paired(shape: Shape, args) -> dict[str, Any]:
    """Every (peer, input) in a process of its own, their forward passes interleaved in
    blocks (paired.py); per input, each peer's speed against glassformer in the same rounds."""
    common = {"shape": dataclasses.asdict(shape), "threads": args.threads, "seed": 0}
    specs = {
        f"{peer}/{inputs}": {"peer": peer, "input": inputs, **common}
        for inputs in INPUTS
        for peer in args.peer_list
    }
    t0 = time.perf_counter()
    result = paired.run(
        "benchmarks.bench_encoder", specs, args.paired_seconds,
        min_blocks=2 if args.quick else 5, in_process=args.in_process,
    )  # fmt: skip
    if "error" in result:
        print(f"  paired: FAILED {result['error']}", flush=True)
        return result
    b = result["blocks"]
    figures = {}
    for name, blocks in b.items():
        peer, inputs = name.split("/")
        figures[name] = {"ms": statistics.median(blocks["step"])}
        if peer != "glassformer":
            figures[name]["speed"] = paired.per_block(
                blocks["step"], b[f"glassformer/{inputs}"]["step"]
            )
    result["figures"] = figures
    rounds = len(b[next(iter(b))]["step"])
    print(f"  paired, interleaved: {rounds} rounds ({time.perf_counter() - t0:.0f} s)", flush=True)
    return result


def print_paired(name: str, run: dict[str, Any]) -> None:
    rows = []
    for case, f in run["figures"].items():
        peer, inputs = case.split("/")
        r = f.get("speed")
        speed = "-" if r is None else f"{ratio(r['median'])} ({r['min']:.2f}-{r['max']:.2f})"
        rows.append([PEERS[peer], inputs, f"{f['ms']:.1f}", speed])
    rounds = len(next(iter(run["blocks"].values()))["step"])
    print_table(
        f"PAIRED {name}: each (peer, input) in its own process, {rounds} rounds of one block "
        "each, interleaved",
        ["peer", "input", "ms", "speed (min-max)"],
        rows,
        [
            f"ms: median over rounds of the mean forward pass in a block (passes per block: "
            f"{run['steps_per_block']})",
            "speed: peer ms / glassformer ms on the same input in the same round (> 1: "
            "glassformer faster), median (min-max) over rounds",
        ],
    )


def print_shape(name: str, s: dict[str, Any]) -> None:
    shape = Shape(**s["shape"])
    ours = s["results"]["glassformer"]
    header = ["peer", "input", "ms (min-max)", "tok/s", "MFU", "RSS MB", "+MB", "kernels"]
    header += ["speed", "memory"]
    rows = []
    for inputs in INPUTS:
        for peer, case in s["results"].items():
            r = case.get(inputs)
            if r is None:
                rows.append([PEERS[peer], inputs, "failed"] + [""] * 7)
                continue
            real = r["real_tokens"] / shape.tokens
            c = compare(ours, case)[inputs] if peer != "glassformer" else {}
            rows.append(
                [
                    PEERS[peer],
                    inputs if inputs == "dense" else f"padded {100 * real:.0f}%",
                    fmt_timing(r["timing"]["forward"]),
                    f"{r['tokens_per_s']:.0f}",
                    percent(r["mfu"]),
                    f"{r['peak_rss_mb']:.0f}",
                    f"{r['rss_above_imports_mb']:.0f}",
                    "+".join(r["kernels"]) or "-",
                    ratio(c.get("speed")),
                    ratio(c.get("memory")),
                ]
            )
    print_table(
        f"ENCODER INFERENCE {name}: {shape.describe()}; "
        f"{s['flop_per_token'] / 1e6:.2f} MFLOP/token (forward)",
        header,
        rows,
        [
            "ms: one forward pass under torch.no_grad(), median of the timed runs (min-max) in "
            "the fastest of the rounds (one process each, interleaved)",
            "tok/s and MFU count real tokens (padded: the % of real tokens shown); MFU = model "
            "FLOP/s (glassformer's formula for all peers) / matmul peak",
            "RSS MB: peak resident memory of the case's process; +MB: above its imports",
            "kernels: sdpa = scaled_dot_product_attention, fast = torch.nn's fused encoder "
            "layer, nested = padding packed into nested tensors, packed = glassformer's "
            "real-token packing (nn/packing.py)",
            "speed: peer ms / glassformer ms on the same input (> 1: glassformer faster); "
            "memory: glassformer +MB / peer +MB (< 1: glassformer smaller)",
        ],
    )


if __name__ == "__main__":
    main(sys.argv[1:])
