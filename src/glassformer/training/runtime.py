"""The trainer's surroundings: which device, autocast, the metrics file."""

from __future__ import annotations

import platform
import warnings
from pathlib import Path

import torch

from ..named import naming
from ..safe_write import write_text
from ..structured import loads_json

__all__ = [
    "SlowBfloat16Warning",
    "autocast",
    "cpu_has_bf16",
    "resolve_device",
    "truncate_metrics",
    "warn_if_slow_bf16",
]


class SlowBfloat16Warning(UserWarning):
    """bfloat16 autocast on a CPU without bfloat16 instructions: emulated, several times
    slower than float32."""


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        error = ValueError("device 'cuda': CUDA is not available here; use device=cpu")
        raise naming(error, names=["device"])
    if name == "mps" and not torch.backends.mps.is_available():
        error = ValueError("device 'mps': MPS is not available here; use device=cpu")
        raise naming(error, names=["device"])
    return torch.device(name)


def autocast(device: torch.device, enabled: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


def cpu_has_bf16() -> bool:
    """Does this CPU compute in bfloat16 natively: x86 AVX512_BF16 or AMX, Arm BF16? (Without
    them torch converts to float32 and back around every operation.) Unknown: True."""
    capabilities = getattr(torch.cpu, "get_capabilities", None)
    if capabilities is not None:
        found = capabilities()
        return any(found.get(k) for k in ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16"))
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True  # older torch cannot tell on Arm; say nothing rather than guess
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: True)() for name in checks)


def warn_if_slow_bf16(device: torch.device, bf16: bool) -> None:
    """Warn (SlowBfloat16Warning) when bf16 autocast would run emulated on this CPU."""
    if bf16 and device.type == "cpu" and not cpu_has_bf16():
        note = SlowBfloat16Warning(
            "train.bf16 is set, but this CPU has no bfloat16 instructions (AVX512_BF16, AMX "
            "or Arm BF16): autocast emulates them and a training step runs several times "
            "slower than in float32; leave bf16 off (train.bf16=false) on this machine"
        )
        warnings.warn(naming(note, names=["train.bf16"]), stacklevel=3)


def truncate_metrics(path: Path, step: int) -> None:
    """Drop metric lines written after ``step`` (work lost by the interruption)."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = loads_json(line, f"{path} line")
        except ValueError:
            continue  # a line cut short by a kill (or one nested too deeply)
        if isinstance(record, dict) and record.get("step", 0) <= step:
            keep.append(line)
    write_text(path, "".join(ln + "\n" for ln in keep))  # replaces a link, never follows it
