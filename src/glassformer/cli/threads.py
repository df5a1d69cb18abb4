"""How many threads PyTorch's CPU kernels get when ``glassformer train`` or ``eval`` runs as a
command: the cores this process may use, less those that other work keeps busy.

PyTorch starts one thread per core. On a shared machine that oversubscribes the cores: each
kernel splits its work into one part per thread and waits for the slowest, and a thread that
shares its core with another process is the slowest every time. Measured on a 2-core AMD EPYC
(150 steps of the demo, median of 3, ``python -m benchmarks.bench_threads``): on a quiet
machine 2 threads take 15.4 s and 1 thread 24.4 s; with one other CPU-bound process running,
2 threads take 41.2 s and 1 thread 25.2 s. This module's choice took 15.7 s and 25.9 s.

So the command looks at its cores for a moment before it computes (its settings checked)
(``/proc/stat``, per core of its affinity set, while it sleeps) and gives PyTorch one thread
per core that is not busy, at least one and never more than PyTorch's own default. It changes
nothing when the user chose: ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` set (torchrun sets the
first), or ``glassformer.cli.main(argv)`` called from Python, whose caller owns its process's
threads.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["busy_cores", "choose_threads", "use_free_cores"]

CHOSEN_BY_USER = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
SAMPLE_SECONDS = 0.2


def choose_threads() -> tuple[int, int, float] | None:
    """``(threads, cores, busy)`` to run with: one thread per core of this process's affinity
    set that other work leaves free (at least 1), how many cores it has and how busy they were
    (in cores); None when the user chose the threads or the cores' load cannot be read (not
    Linux)."""
    if any(os.environ.get(name) for name in CHOSEN_BY_USER):
        return None
    cores = _affinity()
    busy = busy_cores(cores)
    if busy is None:
        return None
    return max(1, min(len(cores), round(len(cores) - busy))), len(cores), busy


def use_free_cores() -> None:
    """Give PyTorch ``choose_threads()`` threads when that is fewer than it has (never more),
    and say so on stderr."""
    chosen = choose_threads()
    if chosen is None:
        return
    import torch

    threads, cores, busy = chosen
    if threads >= torch.get_num_threads():
        return  # never more than PyTorch's own default (one per physical core)
    torch.set_num_threads(threads)
    if threads < cores:
        print(
            f"glassformer: note: other work keeps {busy:.1f} of {cores} cores busy: PyTorch "
            f"runs {threads} thread{'s' if threads > 1 else ''} (OMP_NUM_THREADS=N chooses)",
            file=sys.stderr,
            flush=True,
        )


def busy_cores(cores: list[int], seconds: float = SAMPLE_SECONDS) -> float | None:
    """The cores' busy time over ``seconds`` (this process sleeps meanwhile), in cores: 0 on a
    quiet machine, about 1 with one other CPU-bound process."""
    before = _times(cores)
    if before is None:
        return None
    time.sleep(seconds)
    after = _times(cores)
    if after is None:
        return None
    busy = 0.0
    for (total0, idle0), (total1, idle1) in zip(before, after, strict=True):
        if total1 > total0:
            busy += 1 - (idle1 - idle0) / (total1 - total0)
    return busy


def _times(cores: list[int]) -> list[tuple[int, int]] | None:
    """(total, idle + iowait) jiffies of each core in ``cores``, from ``/proc/stat``."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found: dict[int, tuple[int, int]] = {}
    for line in lines:
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            fields = [int(x) for x in rest.split()]
            found[int(name[3:])] = (sum(fields[:8]), fields[3] + fields[4])
    if any(core not in found for core in cores):
        return None
    return [found[core] for core in cores]


def _affinity() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))
