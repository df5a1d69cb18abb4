"""Named model shapes. ``preset(name, **overrides)`` returns a ModelConfig; a tokenizer usually
overrides ``vocab_size``. The shapes, with what each one is: preset_shapes.py."""

from __future__ import annotations

from typing import Any

from .models.config import ModelConfig
from .preset_shapes import SHAPES

__all__ = ["PRESETS", "preset"]

PRESETS: dict[str, ModelConfig] = {name: ModelConfig(**shape) for name, shape in SHAPES.items()}


def preset(name: str, **overrides: Any) -> ModelConfig:
    """The ModelConfig named ``name`` with ``overrides`` applied (and validated)."""
    if name not in PRESETS:
        raise ValueError(f"model preset {name!r} is not known; choose one of {sorted(PRESETS)}")
    return PRESETS[name].replace(**overrides)
