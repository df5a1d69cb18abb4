"""Names and limits that the command line offers, as plain data: the parsers of ``glassformer``
(cli/*_args.py) read them to list and check choices, so that ``--help`` and the refusal of a bad
option answer without importing PyTorch; the modules that act on them import them from here.

This module imports nothing of glassformer but the package itself (which is light).
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable

__all__ = [
    "MAX_BEAMS",
    "SETTINGS_TABLES",
    "STRATEGIES",
    "builtin_config_names",
    "builtin_configs",
]

STRATEGIES = ("ddp", "fsdp")  # under torchrun: training/distributed.py
MAX_BEAMS = 256  # beam search holds num_beams copies of the KV cache for every prompt
SETTINGS_TABLES = ("run", "model", "train", "data", "sample")  # runs/settings.py's SECTIONS


def builtin_configs() -> Traversable:
    """The folder of the built-in configs, glassformer/runs/configs/ (found without importing
    glassformer.runs)."""
    return resources.files("glassformer") / "runs" / "configs"


def builtin_config_names() -> list[str]:
    """Configs shipped in glassformer/runs/configs/ (usable as ``--config NAME``)."""
    return sorted(
        p.name[: -len(".toml")] for p in builtin_configs().iterdir() if p.name.endswith(".toml")
    )
