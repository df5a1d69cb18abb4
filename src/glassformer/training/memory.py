"""Reusing freed memory on CPU instead of mapping it afresh each step (Linux, glibc).

glibc's malloc serves every request of 32 MB or more with a fresh ``mmap`` and returns it to
the operating system on ``free``. A training step frees and re-allocates the same large
tensors every time (logits, the embedding's gradient, activations), so each step the kernel
maps and zero-fills those pages again: for GPT-2 small on CPU that page-fault work was about
a sixth of the step. ``reuse_freed_memory()`` asks malloc to take every block from its heap
(``M_MMAP_MAX = 0``) and never to give freed heap back (``M_TRIM_THRESHOLD = -1``), so the
next step reuses the same, already mapped pages. The cost: the process keeps its peak memory
until it ends (freed memory is reused, not returned), and the peak can grow by heap
fragmentation (+8% to +15% for GPT-2 small here).

The trainer calls it for CPU training unless ``TrainConfig.reuse_memory`` is False; it is a
no-op elsewhere (other C libraries, macOS, Windows) and on GPUs, whose tensors PyTorch's
caching allocator already reuses.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["reuse_freed_memory"]

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)


def reuse_freed_memory() -> bool:
    """Switch glibc's malloc to keep and reuse freed memory; True when it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl's mallopt does nothing)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # -1 becomes SIZE_MAX inside glibc: never trim the heap top
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, -1))
