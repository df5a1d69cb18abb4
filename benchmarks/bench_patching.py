"""Benchmark: patching grids, glassformer against TransformerLens 4's ``transformer_lens.patching``
on the same random model (eval mode, float32), in one process. The model is a Hugging Face
GPT-2 or Llama (grouped-query heads, ``--family``) saved to a temporary folder with a
word-level tokenizer, loaded by glassformer (``from_huggingface_dir``) and by TransformerLens's
bridge with its raw weights (``enable_compatibility_mode(no_processing=True)``).

    gpt2-small  12 layers, d_model 768, 12 heads (Llama: 4 key/value heads), vocabulary
                50257, batch 8 x context 16
    tiny        2 layers, d_model 64, 4 heads (2), vocabulary 256, batch 2 x context 6 (--quick)

Grids (``--grids``); each step makes the clean run (TransformerLens: its cache, and the
corrupted one for path patching) and the whole grid, without a progress bar:

    resid_pre    patch_residual                   get_act_patch_resid_pre               (L, T)
    head_z       patch_heads                      get_act_patch_attn_head_out_all_pos   (L, H)
    blocks       patch_blocks                     get_act_patch_block_every             (3, L, T)
    heads_every  patch_heads_every                get_act_patch_attn_head_all_pos_every (5, L, H)
    path_q       patch_path_receivers((0, 0))     get_act_patch_direct_path(0, 0, "q")  (L, H)
    subset       patch_residual(layers=[0, L/2, L-1], positions=the last 4)
                                                  get_act_patch_resid_pre(index_df=...)  (3, 4)
    direct       patch_path_senders()             each head's clean-minus-corrupted write
                                                  added to the final stream by a hook    (L, H)

The metric is the logit difference of tokens 3 and 5 at the last position, averaged over the
batch: glassformer's ``logit_difference(model, 3, 5)`` (which names the position it reads, so
the grids compute the logits there alone), TransformerLens's a function of its logits. Before
the rounds each grid is made once by both libraries and the largest difference of their
numbers is reported (``max_abs_difference``; the NaN glassformer puts where TransformerLens
puts 0 counts as 0).

Paired rounds (benchmarks/paired.py): each round times every step once, the order reversed
every other round (a first untimed step of each warms it up); a grid's speed is the median
over rounds of TransformerLens's time over glassformer's in the same round (above 1:
glassformer is faster), min and max over rounds as the spread. A line per step as it ends
shows progress (a GPT-2 small grid is hundreds of forward passes).

    .venv/bin/python -m benchmarks.bench_patching                  # GPT-2 small, 3 grids: ~15 min
    .venv/bin/python -m benchmarks.bench_patching --grids all --rounds 2   # all seven grids
    .venv/bin/python -m benchmarks.bench_patching --family llama
    .venv/bin/python -m benchmarks.bench_patching --quick          # tiny shape, all grids: seconds

Prints a table and writes bench-results/patching.json (patching-llama.json for Llama).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_patching.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import Shape, environment, print_table, ratio, without_out, write_json

SHAPES = {
    "gpt2-small": Shape(n_layer=12, n_head=12, d_model=768, context=16, batch=8, vocab=50257),
    "tiny": Shape(n_layer=2, n_head=4, d_model=64, context=6, batch=2, vocab=256),
}
GRIDS = ("resid_pre", "head_z", "blocks", "heads_every", "path_q", "subset", "direct")
DEFAULT_GRIDS = ("resid_pre", "head_z", "path_q")  # GPT-2 small: 468 corrupted runs a library
GRID_RUNS = {  # cells of a grid, TransformerLens's forward passes (path_q: heads after layer 0)
    "resid_pre": lambda s: s.n_layer * s.context,
    "head_z": lambda s: s.n_layer * s.n_head,
    "blocks": lambda s: 3 * s.n_layer * s.context,
    "heads_every": lambda s: 5 * s.n_layer * s.n_head,
    "path_q": lambda s: (s.n_layer - 1) * s.n_head,
    "subset": lambda s: len({0, s.n_layer // 2, s.n_layer - 1}) * 4,
    "direct": lambda s: s.n_layer * s.n_head,  # TransformerLens's; glassformer runs no block
}


def build(shape: Shape, family: str, folder: Path):
    """(glassformer model, TransformerLens bridge) of one random model saved to ``folder``."""
    import transformers
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformer_lens.model_bridge import TransformerBridge

    from glassformer.interop.huggingface import from_huggingface_dir

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if family == "gpt2":
        cls = transformers.GPT2LMHeadModel
        config = transformers.GPT2Config(
            n_layer=shape.n_layer, n_embd=shape.d_model, n_head=shape.n_head,
            vocab_size=shape.vocab, n_positions=max(64, shape.context),
        )  # fmt: skip
    else:
        cls = transformers.LlamaForCausalLM
        config = transformers.LlamaConfig(
            num_hidden_layers=shape.n_layer, hidden_size=shape.d_model,
            num_attention_heads=shape.n_head, num_key_value_heads=_kv_heads(shape.n_head),
            intermediate_size=4 * shape.d_model, vocab_size=shape.vocab,
            max_position_embeddings=max(64, shape.context),
        )  # fmt: skip
    cls(config).save_pretrained(folder)
    words = Tokenizer(WordLevel({f"w{i}": i for i in range(shape.vocab)}, unk_token="w0"))
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=words, bos_token="w1", eos_token="w2", unk_token="w0"
    ).save_pretrained(folder)
    hf = cls.from_pretrained(folder, local_files_only=True).eval()
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf, device="cpu")
    bridge.enable_compatibility_mode(no_processing=True)
    return from_huggingface_dir(folder).eval(), bridge


def _kv_heads(n_head: int) -> int:
    """Llama's key/value heads: a third of the query heads where that divides, else half."""
    return n_head // 3 if n_head % 3 == 0 else max(1, n_head // 2)


def make_steps(model, bridge, clean, corrupted, grid: str):
    """The glassformer and TransformerLens steps of one grid (quiet: no bar, stderr caught),
    and the two functions that give the grids' numbers."""
    import pandas as pd
    from transformer_lens import patching

    from glassformer import circuits

    ours = circuits.logit_difference(model, 3, 5)  # the batch's mean at the last position
    n_layer, context = len(model.blocks), clean.shape[1]
    layers = sorted({0, n_layer // 2, n_layer - 1})  # three layers (two in a 2-layer model)
    positions = list(range(context - 4, context))

    def theirs(logits):
        return (logits[:, -1, 3] - logits[:, -1, 5]).mean()

    def tl_grid():
        _, clean_cache = bridge.run_with_cache(clean)
        if grid in ("path_q", "direct"):
            _, bad = bridge.run_with_cache(corrupted)
            if grid == "direct":
                return _tl_direct(bridge, corrupted, clean_cache, bad, theirs)
            return patching.get_act_patch_direct_path(
                bridge, corrupted, clean_cache, bad, theirs, 0, 0, "q", verbose=False
            )
        if grid == "subset":
            rows = [(layer, p) for layer in layers for p in positions]
            index = pd.DataFrame(rows, columns=["layer", "pos"])
            return patching.get_act_patch_resid_pre(
                bridge, corrupted, clean_cache, theirs, index_axis_names=None, index_df=index
            )
        name = {
            "resid_pre": "get_act_patch_resid_pre",
            "head_z": "get_act_patch_attn_head_out_all_pos",
            "blocks": "get_act_patch_block_every",
            "heads_every": "get_act_patch_attn_head_all_pos_every",
        }[grid]
        return getattr(patching, name)(bridge, corrupted, clean_cache, theirs)

    def gf_grid():
        args = (model, clean, corrupted, ours)
        if grid == "path_q":
            return circuits.patch_path_receivers(*args, (0, 0), progress=False)
        if grid == "direct":
            return circuits.patch_path_senders(*args, progress=False)
        if grid == "subset":
            return circuits.patch_residual(*args, layers=layers, positions=positions,
                                           progress=False)  # fmt: skip
        call = {
            "resid_pre": circuits.patch_residual,
            "head_z": circuits.patch_heads,
            "blocks": circuits.patch_blocks,
            "heads_every": circuits.patch_heads_every,
        }[grid]
        return call(*args, progress=False)

    def quiet(fn):
        @torch.no_grad()
        def step():
            with contextlib.redirect_stderr(io.StringIO()):
                return fn()

        return step

    steps = {f"glassformer:{grid}": quiet(gf_grid), f"transformer_lens:{grid}": quiet(tl_grid)}
    return steps, (quiet(gf_grid), quiet(tl_grid))


def _tl_direct(bridge, corrupted, clean_cache, bad, metric):
    """Each head's direct path to the logits, written with TransformerLens's hooks: its
    clean-minus-corrupted write z_h W^O_h added to the final stream, one run per head."""
    n_layer, n_head = bridge.cfg.n_layers, bridge.cfg.n_heads
    out = torch.zeros(n_layer, n_head)
    last = f"blocks.{n_layer - 1}.hook_resid_post"
    for layer in range(n_layer):
        name = f"blocks.{layer}.attn.hook_z"
        for head in range(n_head):
            d = clean_cache[name][:, :, head] - bad[name][:, :, head]  # (B, T, D)
            delta = d @ bridge.W_O[layer, head]  # (B, T, C)
            logits = bridge.run_with_hooks(
                corrupted, fwd_hooks=[(last, lambda x, hook, delta=delta: x + delta)]
            )
            out[layer, head] = metric(logits)
    return out


def differences(pairs: dict) -> dict[str, float]:
    """The largest difference between glassformer's and TransformerLens's numbers per grid."""
    found = {}
    for grid, (gf, tl) in pairs.items():
        ours, theirs = gf().nan_to_num(0.0), torch.as_tensor(tl()).reshape(-1)
        found[grid] = float((ours.reshape(-1) - theirs.to(ours.dtype)).abs().max())
    return found


def main(argv: list[str] | None = None) -> dict[str, Any]:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the tiny shape, all grids")
    ap.add_argument("--shape", choices=list(SHAPES), default=None, help="default gpt2-small")
    ap.add_argument("--family", choices=["gpt2", "llama"], default="gpt2")
    ap.add_argument("--grids", default=None,
                    help=f"comma-separated, or all: {','.join(GRIDS)} (default "
                         f"{','.join(DEFAULT_GRIDS)}; all with --quick)")  # fmt: skip
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--seconds", type=float, default=0.0, help="paired rounds for at least S s")
    ap.add_argument("--rounds", type=int, default=3, help="at least N paired rounds (default 3)")
    ap.add_argument("--out", default=None, help="default bench-results/patching[-llama].json")
    args = ap.parse_args(argv)
    shape_name = args.shape or ("tiny" if args.quick else "gpt2-small")
    grids_arg = args.grids or ("all" if shape_name == "tiny" else ",".join(DEFAULT_GRIDS))
    grids = list(GRIDS) if grids_arg == "all" else [g for g in grids_arg.split(",") if g]
    if not grids or any(g not in GRIDS for g in grids):
        ap.error(f"--grids {args.grids}: choose from {list(GRIDS)} or all")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: need at least 1")
    out = args.out or f"bench-results/patching{'-llama' if args.family == 'llama' else ''}.json"
    torch.set_num_threads(args.threads)
    env, shape = environment(args.threads), SHAPES[shape_name]
    print(f"torch {env['torch']}, {args.threads} threads, {env['cpu']}, load average "
          f"{env['load_average'][0]:.2f}")  # fmt: skip
    print(f"{shape_name} ({args.family}): {shape.describe()}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        model, bridge = build(shape, args.family, Path(folder))
    g = torch.Generator().manual_seed(1)
    clean = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=g)
    corrupted = clean.clone()
    corrupted[:, shape.context // 2] = (clean[:, shape.context // 2] + 1) % shape.vocab
    steps, pairs = {}, {}
    for grid in grids:
        steps_of, pairs[grid] = make_steps(model, bridge, clean, corrupted, grid)
        steps.update(steps_of)
    same = differences(pairs)
    print("largest |glassformer - TransformerLens|: " + ", ".join(
        f"{grid} {d:.1e}" for grid, d in same.items()), flush=True)  # fmt: skip
    t0 = time.perf_counter()

    def progress(round_: int, name: str, seconds: float) -> None:
        of = "" if args.seconds else f"/{args.rounds}"  # --seconds may add rounds
        when = "warm-up" if round_ == 0 else f"round {round_}{of}"
        print(f"  {when:>11}  {name:<30} {seconds:9.2f} s   ({time.perf_counter() - t0:.0f} s)",
              flush=True)  # fmt: skip

    runners = {name: paired.LocalRunner(step, warmup=0) for name, step in steps.items()}
    result = paired.interleave(
        runners, args.seconds, min_blocks=args.rounds, block_s=0.0, on_block=progress
    )
    blocks = {name: b["step"] for name, b in result["blocks"].items()}  # ms per grid, a round each
    figures = {
        grid: {
            "glassformer_ms": statistics.median(blocks[f"glassformer:{grid}"]),
            "transformer_lens_ms": statistics.median(blocks[f"transformer_lens:{grid}"]),
            "runs": GRID_RUNS[grid](shape),
            "max_abs_difference": same[grid],
            "speed": paired.per_block(
                blocks[f"transformer_lens:{grid}"], blocks[f"glassformer:{grid}"]
            ),
        }
        for grid in grids
    }
    rows = [
        [grid, f"{f['runs']:,}", f"{f['glassformer_ms']:,.0f}", f"{f['transformer_lens_ms']:,.0f}",
         ratio(f["speed"]["median"]), f"{f['speed']['min']:.2f}-{f['speed']['max']:.2f}"]
        for grid, f in figures.items()
    ]  # fmt: skip
    n_rounds = len(next(iter(blocks.values())))
    print_table(
        f"patching grids, glassformer vs TransformerLens, {shape_name} {args.family} "
        f"({n_rounds} paired rounds, {time.perf_counter() - t0:.0f} s)",
        ["grid", "runs", "glassformer ms", "TL ms", "TL / glassformer", "rounds"],
        rows,
        ["runs: the grid's cells (a corrupted forward pass each in TransformerLens); ms: a whole "
         "grid (its clean run included), "
         "median over rounds; TL / glassformer: median of the rounds' ratios (min-max), "
         "above 1: glassformer faster"],
    )  # fmt: skip
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "patching",
        "argv": without_out(argv),
        "environment": env,
        "shape": {"name": shape_name, "family": args.family, **dataclasses.asdict(shape)},
        "rounds": n_rounds,
        "blocks_ms": blocks,
        "figures": figures,
    }
    print(f"wrote {write_json(out, data)}")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
