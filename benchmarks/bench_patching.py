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

Paired rounds (benchmarks/paired.py): each round times one block of every step, the order
reversed every other round; a grid's ratio is the median over rounds of glassformer's time
over TransformerLens's in the same round (below 1: glassformer is faster), min and max over
rounds as the spread.

    .venv/bin/python -m benchmarks.bench_patching                  # GPT-2 small: minutes
    .venv/bin/python -m benchmarks.bench_patching --family llama
    .venv/bin/python -m benchmarks.bench_patching --quick          # tiny shape: seconds

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_patching.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import paired
from benchmarks.common import Shape, environment, print_table, ratio, write_json

SHAPES = {
    "gpt2-small": Shape(n_layer=12, n_head=12, d_model=768, context=16, batch=8, vocab=50257),
    "tiny": Shape(n_layer=2, n_head=4, d_model=64, context=6, batch=2, vocab=256),
}
GRIDS = ("resid_pre", "head_z", "blocks", "heads_every", "path_q")


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


def make_steps(model, bridge, clean, corrupted, grid: str) -> dict[str, Callable[[], None]]:
    """The glassformer and TransformerLens steps of one grid (quiet: no bar, stderr caught)."""
    from transformer_lens import patching

    from glassformer import circuits

    def ours(out):
        return out.logits[0, -1, 3] - out.logits[0, -1, 5]

    def theirs(logits):
        return logits[0, -1, 3] - logits[0, -1, 5]

    def tl_grid():
        _, clean_cache = bridge.run_with_cache(clean)
        if grid == "path_q":
            _, bad = bridge.run_with_cache(corrupted)
            return patching.get_act_patch_direct_path(
                bridge, corrupted, clean_cache, bad, theirs, 0, 0, "q", verbose=False
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
        call = {
            "resid_pre": circuits.patch_residual,
            "head_z": circuits.patch_heads,
            "blocks": circuits.patch_blocks,
            "heads_every": circuits.patch_heads_every,
        }[grid]
        return call(*args, progress=False)

    def quiet(fn):
        @torch.no_grad()
        def step() -> None:
            with contextlib.redirect_stderr(io.StringIO()):
                fn()

        return step

    return {f"glassformer:{grid}": quiet(gf_grid), f"transformer_lens:{grid}": quiet(tl_grid)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the tiny shape, a few rounds")
    ap.add_argument("--shape", choices=list(SHAPES), default=None, help="default gpt2-small")
    ap.add_argument("--family", choices=["gpt2", "llama"], default="gpt2")
    ap.add_argument("--grids", default=",".join(GRIDS), help=",".join(GRIDS))
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--seconds", type=float, default=None, help="paired rounds for at least S s")
    ap.add_argument("--rounds", type=int, default=None, help="at least N rounds (default 5)")
    ap.add_argument("--out", default=None, help="default bench-results/patching[-llama].json")
    args = ap.parse_args(argv)
    grids = [g for g in args.grids.split(",") if g]
    if not grids or any(g not in GRIDS for g in grids):
        ap.error(f"--grids {args.grids}: choose from {list(GRIDS)}")
    shape_name = args.shape or ("tiny" if args.quick else "gpt2-small")
    seconds = args.seconds if args.seconds is not None else (0.5 if args.quick else 60.0)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    if rounds < 1:
        ap.error(f"--rounds {rounds}: need at least 1")
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
    steps = {
        k: v for grid in grids for k, v in make_steps(model, bridge, clean, corrupted, grid).items()
    }
    t0 = time.perf_counter()
    runners = {name: paired.LocalRunner(step, warmup=1) for name, step in steps.items()}
    result = paired.interleave(runners, seconds, min_blocks=rounds)
    blocks = {name: b["step"] for name, b in result["blocks"].items()}  # ms per grid, a round each
    figures = {
        grid: {
            "glassformer_ms": statistics.median(blocks[f"glassformer:{grid}"]),
            "transformer_lens_ms": statistics.median(blocks[f"transformer_lens:{grid}"]),
            "vs_transformer_lens": paired.per_block(
                blocks[f"glassformer:{grid}"], blocks[f"transformer_lens:{grid}"]
            ),
        }
        for grid in grids
    }
    rows = [
        [grid, f"{f['glassformer_ms']:.0f}", f"{f['transformer_lens_ms']:.0f}",
         ratio(f["vs_transformer_lens"]["median"]),
         f"{f['vs_transformer_lens']['min']:.2f}-{f['vs_transformer_lens']['max']:.2f}"]
        for grid, f in figures.items()
    ]  # fmt: skip
    n_rounds = len(next(iter(blocks.values())))
    print_table(
        f"patching grids, glassformer vs TransformerLens, {shape_name} {args.family} "
        f"({n_rounds} paired rounds, {time.perf_counter() - t0:.0f} s)",
        ["grid", "glassformer ms", "TL ms", "ratio", "rounds"],
        rows,
        ["ms: a whole grid (clean run included), median over rounds; ratio: glassformer / TL, "
         "median of the rounds' ratios (min-max)"],
    )  # fmt: skip
    env["load_average_after"] = list(os.getloadavg())
    data = {
        "benchmark": "patching",
        "environment": env,
        "shape": {"name": shape_name, "family": args.family, **dataclasses.asdict(shape)},
        "steps_per_block": result["steps_per_block"],
        "blocks_ms": blocks,
        "figures": figures,
    }
    print(f"wrote {write_json(out, data)}")
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
