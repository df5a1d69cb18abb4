"""The trainer's surroundings: which device, autocast, the progress bar, the metrics file."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..files import write_text

__all__ = ["autocast", "progress_bar", "resolve_device", "truncate_metrics"]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but CUDA is not available here; use --device cpu")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device='mps' but MPS is not available here; use --device cpu")
    return torch.device(name)


def autocast(device: torch.device, enabled: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


def progress_bar(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="step", dynamic_ncols=True)


def truncate_metrics(path: Path, step: int) -> None:
    """Drop metric lines written after ``step`` (work lost by the interruption)."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if isinstance(record, dict) and record.get("step", 0) <= step:
            keep.append(line)
    write_text(path, "".join(ln + "\n" for ln in keep))  # replaces a link, never follows it
