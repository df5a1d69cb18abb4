"""glassformer: transformers built from their formulas, and made to be looked inside."""

from . import nn
from .config import ModelConfig
from .inspect import capture
from .interop import from_torch, to_torch
from .interop.huggingface import from_huggingface, from_huggingface_dir, to_huggingface
from .models import (
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
    GlassformerModel,
    ModelOutput,
    load_model,
)
from .presets import PRESETS, preset

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "DecoderLM",
    "EncoderClassifier",
    "EncoderDecoder",
    "EncoderMLM",
    "EncoderModel",
    "GlassformerModel",
    "ModelConfig",
    "ModelOutput",
    "capture",
    "from_huggingface",
    "from_huggingface_dir",
    "from_torch",
    "load_model",
    "nn",
    "preset",
    "to_huggingface",
    "to_torch",
]
