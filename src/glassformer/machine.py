"""What this machine has: the memory a process could still allocate, and how to write a size.

``available_memory`` reads free memory on a CUDA device, and otherwise available RAM:
/proc/meminfo's MemAvailable, within a container's cgroup (v2) limit, else ``os.sysconf``.
The model size check (models/budget.py) and the trainer's disk-full message read it.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

__all__ = ["available_memory", "format_bytes"]


def available_memory(device: str | torch.device = "cpu") -> int | None:
    """Bytes this process could still allocate on ``device``: free memory on a CUDA device,
    available RAM otherwise (MPS shares it); None where it cannot be known."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type not in ("cpu", "mps"):
        return None  # e.g. meta: nothing is allocated
    return available_ram()


def available_ram() -> int | None:
    """Available RAM in bytes: the least of MemAvailable and a cgroup's room; None unknown."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)  # given in kB
    except (OSError, ValueError, IndexError):
        pass
    try:  # a container's limit (cgroup v2), which /proc/meminfo does not show
        cgroup = Path("/sys/fs/cgroup")
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            return None
    return max(min(found), 0)


def format_bytes(n: float) -> str:
    """1536 -> "1.5 KiB"; 2.4e13 -> "21.8 TiB"."""
    units = ("KiB", "MiB", "GiB", "TiB", "PiB")
    if n < 1024:
        return f"{n:.0f} B"
    for unit in units:
        n /= 1024
        if n < 1024 or unit == units[-1]:
            return f"{n:.1f} {unit}"
