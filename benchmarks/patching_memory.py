"""Memory of a patching grid: the peak resident memory (RSS) above what the process held before
the grid, on a random DecoderLM of GPT-2 small's shape (12 layers, d_model 768, 12 heads,
vocabulary 50257, float32), batch 8 x context 16, with ``logit_difference`` as the metric.
Each case runs in a fresh process (freed memory stays with the allocator), its RSS read from
/proc/self/statm every millisecond; beside it, one forward pass of the same batch.

    .venv/bin/python -m benchmarks.patching_memory            # ~1 min on 2 cores

A grid holds the clean and the corrupted runs' caches and one cell's work, so its peak does not
grow with the number of cells: the cases with 1 and 2 layers of cells say so. Prints a table
(MB = 10^6 bytes); Linux only (/proc).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python benchmarks/patching_memory.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = {  # name: the call, with model, clean, corrupted, metric in scope
    "one forward pass": "model(clean)",
    "patch_residual, 1 layer (16 cells)": "circuits.patch_residual(*args, layers=[0])",
    "patch_residual, 2 layers (32 cells)": "circuits.patch_residual(*args, layers=[0, 1])",
    "patch_heads z, 1 layer (12 cells)": "circuits.patch_heads(*args, layers=[0])",
    "patch_path_senders, all (144 heads)": "circuits.patch_path_senders(*args)",
}
BATCH, CONTEXT = 8, 16


def rss() -> int:
    """This process's resident memory, bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(case: str) -> dict[str, float]:
    """Build the model, then run ``case`` once while a thread samples RSS: the peak above the
    RSS before it, MB."""
    import torch

    from glassformer import DecoderLM, ModelConfig, circuits

    torch.set_num_threads(2)
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=50257, d_model=768, n_layer=12, n_head=12, max_len=64)
    model = DecoderLM(config).eval()
    g = torch.Generator().manual_seed(1)
    clean = torch.randint(0, 50257, (BATCH, CONTEXT), generator=g)
    corrupted = clean.clone()
    corrupted[:, CONTEXT // 2] += 1
    args = (model, clean, corrupted, circuits.logit_difference(model, 3, 5))
    with torch.no_grad():
        model(clean)  # warm the allocator and torch's first-call caches
    base, peak, done = rss(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    with torch.no_grad():
        eval(CASES[case], {"circuits": circuits, "model": model, "clean": clean, "args": args})
    done.set()
    sampler.join()
    return {"peak_mb": (max(peak[0], rss()) - base) / 1e6}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(measure(sys.argv[2])))
        return
    print(f"GPT-2 small shape, batch {BATCH} x context {CONTEXT}, float32; peak RSS above the "
          "process before the call (MB)")  # fmt: skip
    for case in CASES:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.patching_memory", "--case", case],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
        print(f"  {case:<40} {json.loads(out.stdout.splitlines()[-1])['peak_mb']:8.1f}")


if __name__ == "__main__":
    main()
