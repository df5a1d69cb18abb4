"""The peers of the data benchmark (bench_data.py): each prepares one corpus and, where it
trains, takes one training step, on a first run (nothing cached) and a second run (what the
first left on disk; the floor, which caches nothing, has a first run only), through its public
command line only.

    glassformer-char  glassformer train --data FILE --steps 1 --tokenizer char
    glassformer-bpe   ... --tokenizer bpe --vocab-size 512 (trained on the data by each run)
    glassformer-hf    ... --init-from DIR: a 1-layer GPT-2 folder holding the benchmark's
                      byte-level BPE tokenizer.json (8,192 ids); the fine-tuning path
    nanogpt           nanoGPT's data/openwebtext/prepare.py (nanogpt_prepare.py: offline, the
                      same tokenizer.json), then its train.py as it ships for one step
                      (np.memmap of train.bin, random windows: its get_batch); the second
                      run is train.py alone, prepare.py's files being on disk
    hf-datasets       datasets.load_dataset("text") + .map(batched=True, num_proc=2) with the
                      same tokenizer.json (data_hf_prepare.py); no training step
    tokenizers-alone  the floor: the tokenizers library alone encodes the corpus with the same
                      tokenizer.json into a uint16 file (data_tokenizers_alone.py), on all
                      cores; no training step and no second run ("second": None)

The model is the same tiny one everywhere (1 layer, d_model 32, 2 heads, context 64, batch 8),
so that the time is the data's. glassformer's token cache is a fresh GLASSFORMER_CACHE folder
for the first run, kept for the second; the Hugging Face caches are folders of the case's own
(HF_HOME, HF_DATASETS_CACHE), offline.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.data_measure import folder_bytes, run_command

ROOT = Path(__file__).resolve().parents[1]
LABELS = {
    "glassformer-char": "glassformer, char",
    "glassformer-bpe": "glassformer, BPE 512",
    "glassformer-hf": "glassformer, tokenizer.json",
    "nanogpt": "nanoGPT's way",
    "hf-datasets": "HF datasets + tokenizers",
    "tokenizers-alone": "tokenizers library alone",
}
BPE_VOCAB = 512
MODEL = {"n_layer": 1, "d_model": 32, "n_head": 2, "context": 64, "batch": 8}
GLASSFORMER_SETTINGS = [
    "--set", f"model.n_layer={MODEL['n_layer']}", "--set", f"model.d_model={MODEL['d_model']}",
    "--set", f"model.n_head={MODEL['n_head']}",
]  # fmt: skip
TRAIN_SETTINGS = [
    "--set", f"train.context={MODEL['context']}", "--set", f"train.batch_size={MODEL['batch']}",
    "--set", "train.warmup=0", "--set", "train.eval_batches=1", "--set", "sample.max_new_tokens=1",
]  # fmt: skip
TOKENIZER_ARGS = {
    "glassformer-char": ["--tokenizer", "char", *GLASSFORMER_SETTINGS],
    "glassformer-bpe": ["--tokenizer", "bpe", "--vocab-size", str(BPE_VOCAB),
                        *GLASSFORMER_SETTINGS],
}  # fmt: skip
CACHE_HIT = r"([\d,]+) tokens read from the token cache"


def environ(**extra: str | Path) -> dict[str, str]:
    """This process's environment, the repository on PYTHONPATH (for ``-m benchmarks...``),
    Hugging Face offline, and ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "true"}
    return env | {k: str(v) for k, v in extra.items()}


def run_case(peer: str, corpus: Path, folder: Path, shared: dict[str, Any]) -> dict[str, Any]:
    """The first and second run of ``peer`` on ``corpus``, everything written in ``folder``
    (deleted after). ``shared``: {"hf_dir", "tokenizer_json", "vocab", "nanogpt", "procs"}."""
    folder.mkdir(parents=True)
    try:
        if peer.startswith("glassformer"):
            return glassformer(peer, corpus, folder, shared)
        peers = {"nanogpt": nanogpt, "hf-datasets": hf_datasets, "tokenizers-alone": alone}
        return peers[peer](corpus, folder, shared)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _ready(run: dict[str, Any]) -> dict[str, Any]:
    """A run's figures: ready_s is the time to the end of the first step where there is one,
    else to the end of the command; the output is left out unless it failed."""
    out = {k: v for k, v in run.items() if k not in ("output", "kept")}
    out["ready_s"] = run["first_step_s"] if run.get("first_step_s") is not None else run["wall_s"]
    return out


def glassformer(peer: str, corpus: Path, folder: Path, shared: dict[str, Any]) -> dict[str, Any]:
    cache = folder / "token-cache"
    args = TOKENIZER_ARGS.get(peer) or ["--init-from", str(shared["hf_dir"])]
    env = environ(GLASSFORMER_CACHE=cache)

    def once(name: str) -> dict[str, Any]:
        cmd = [sys.executable, "-m", "glassformer", "train", "--data", str(corpus),
               "--steps", "1", *args, *TRAIN_SETTINGS, "--out", str(folder / name)]  # fmt: skip
        return run_command(cmd, env=env, marker=r"^step 1/", keep=CACHE_HIT)

    first = once("first")
    if "error" in first:
        return {"error": "first run: " + first["error"]}
    tokens_on_disk = [p for p in cache.iterdir() if p.suffix in (".uint16", ".uint32")]
    files = sorted(p.name for p in tokens_on_disk)  # the token files (not scans/: the checks)
    cache_bytes = sum(p.stat().st_size for p in tokens_on_disk)
    second = once("second")
    if "error" in second:
        return {"error": "second run: " + second["error"]}
    counts = [int(m.group(1).replace(",", "")) for k in second["kept"]
              if (m := re.search(CACHE_HIT, k))]  # fmt: skip
    tokens = sum(counts) if counts else None  # shown for parts of a million characters up
    return {
        "first": _ready(first),
        "second": _ready(second),
        "cache_bytes": cache_bytes,
        "cache_files": files,
        "tokens": tokens,
        "bytes_per_token": cache_bytes / tokens if tokens else None,
    }


def nanogpt(corpus: Path, folder: Path, shared: dict[str, Any]) -> dict[str, Any]:
    checkout = Path(shared["nanogpt"])
    work = folder / "nanogpt"
    data = work / "data" / "bench"
    data.mkdir(parents=True)
    shutil.copy(checkout / "configurator.py", work)  # train.py reads it from its working folder
    env = environ(HF_HOME=folder / "hf-home", HF_DATASETS_CACHE=folder / "hf-home" / "datasets")
    cmd = [sys.executable, "-m", "benchmarks.nanogpt_prepare",
           str(checkout / "data" / "openwebtext" / "prepare.py"), str(data), str(corpus),
           str(shared["tokenizer_json"]), str(shared["procs"])]  # fmt: skip
    prepare = run_command(cmd, env=env, keep=r"^same tokens as tokenizers")
    if "error" in prepare:
        return {"error": "prepare.py: " + prepare["error"]}
    # train.py reads the vocabulary size from meta.pkl, as shakespeare_char/prepare.py writes it
    (data / "meta.pkl").write_bytes(pickle.dumps({"vocab_size": shared["vocab"]}))
    train = [sys.executable, str(checkout / "train.py"), "--dataset=bench", "--device=cpu",
             "--compile=False", "--dtype=float32", f"--n_layer={MODEL['n_layer']}",
             f"--n_head={MODEL['n_head']}", f"--n_embd={MODEL['d_model']}",
             f"--block_size={MODEL['context']}", f"--batch_size={MODEL['batch']}",
             "--gradient_accumulation_steps=1", "--max_iters=0", "--eval_iters=1",
             "--log_interval=1", "--always_save_checkpoint=False",
             f"--out_dir={work / 'out'}"]  # fmt: skip
    runs = [run_command(train, env=env, cwd=work, marker=r"^iter 0:") for _ in range(2)]
    for name, r in zip(("first", "second"), runs, strict=True):
        if "error" in r:
            return {"error": f"train.py, {name} run: {r['error']}"}
    first = _ready(runs[0])
    first["prepare"] = _ready(prepare)
    first["ready_s"] += prepare["wall_s"]
    first["peak_rss_mb"] = max(first["peak_rss_mb"], prepare["peak_rss_mb"])
    first["max_process_rss_mb"] = max(first["max_process_rss_mb"], prepare["max_process_rss_mb"])
    token_bytes = sum((data / f).stat().st_size for f in ("train.bin", "val.bin"))
    return {
        "first": first,
        "second": _ready(runs[1]),
        "cache_bytes": token_bytes,
        "cache_files": ["train.bin", "val.bin"],
        "datasets_cache_bytes": folder_bytes(folder / "hf-home"),
        "tokens": None,
        "bytes_per_token": 2.0,  # np.uint16, by prepare.py's construction
        "same_tokens": any(k.endswith("yes") for k in prepare["kept"]),
    }


def hf_datasets(corpus: Path, folder: Path, shared: dict[str, Any]) -> dict[str, Any]:
    cache = folder / "datasets-cache"
    env = environ(HF_HOME=folder / "hf-home", HF_DATASETS_CACHE=cache)
    cmd = [sys.executable, "-m", "benchmarks.data_hf_prepare", str(corpus),
           str(shared["tokenizer_json"]), str(cache)]  # fmt: skip
    first = run_command(cmd, env=env, keep=r"^tokens \d+")
    if "error" in first:
        return {"error": "first run: " + first["error"]}
    cache_bytes = folder_bytes(cache)
    second = run_command(cmd, env=env, keep=r"^tokens \d+")
    if "error" in second:
        return {"error": "second run: " + second["error"]}
    tokens = int(second["kept"][-1].split()[1])
    return {
        "first": _ready(first),
        "second": _ready(second),
        "cache_bytes": cache_bytes,
        "tokens": tokens,
        "bytes_per_token": cache_bytes / tokens if tokens else None,
    }


def alone(corpus: Path, folder: Path, shared: dict[str, Any]) -> dict[str, Any]:
    """The floor: one run of data_tokenizers_alone.py (nothing is cached, so there is no second
    run: "second" is None)."""
    out = folder / "tokens.uint16"
    cmd = [sys.executable, "-m", "benchmarks.data_tokenizers_alone", str(corpus),
           str(shared["tokenizer_json"]), str(out)]  # fmt: skip
    first = run_command(cmd, env=environ(), keep=r"^tokens \d+")
    if "error" in first:
        return {"error": "first run: " + first["error"]}
    tokens = int(first["kept"][-1].split()[1])
    cache_bytes = out.stat().st_size
    return {
        "first": _ready(first),
        "second": None,
        "cache_bytes": cache_bytes,
        "cache_files": [out.name],
        "tokens": tokens,
        "bytes_per_token": cache_bytes / tokens if tokens else None,
    }
