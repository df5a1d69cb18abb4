"""Named model shapes. ``preset(name, **overrides)`` returns a ModelConfig; a tokenizer usually
overrides ``vocab_size``. The shapes, with what each one is: glassformer/preset_shapes.py,
which imports nothing, so that the command line lists them without loading PyTorch."""

from __future__ import annotations

from typing import Any

from ..preset_shapes import SHAPES
from .config import ModelConfig

__all__ = ["PRESETS", "preset"]

PRESETS: dict[str, ModelConfig] = {name: ModelConfig(**shape) for name, shape in SHAPES.items()}


def preset(name: str, **overrides: Any) -> ModelConfig:
    """The ModelConfig named ``name`` with ``overrides`` applied (and validated)."""
    if name not in PRESETS:
        raise ValueError(f"model preset {name!r} is not known; choose one of {sorted(PRESETS)}")
    return PRESETS[name].replace(**overrides)
