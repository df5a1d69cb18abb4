"""glassformer: transformers built from their formulas, and made to be looked inside.

The names below are imported on first use (PEP 562's module ``__getattr__``): ``import
glassformer`` and ``glassformer --version`` answer without loading PyTorch, and
``glassformer.DecoderLM`` or ``from glassformer import DecoderLM`` loads what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# each public name -> the module that defines it (a submodule: the name itself)
_SOURCES = {
    "nn": ".nn",
    "ModelConfig": ".models.config",
    "capture": ".inspect",
    "from_torch": ".interop",
    "to_torch": ".interop",
    "from_huggingface": ".interop.huggingface",
    "from_huggingface_dir": ".interop.huggingface",
    "to_huggingface": ".interop.huggingface",
    **dict.fromkeys(
        (
            "DecoderLM",
            "EncoderClassifier",
            "EncoderDecoder",
            "EncoderMLM",
            "EncoderModel",
            "GlassformerModel",
            "ModelOutput",
            "load_model",
        ),
        ".models",
    ),
    "PRESETS": ".presets",
    "preset": ".presets",
}

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

if TYPE_CHECKING:  # what the names are, for type checkers and the API reference
    from . import nn
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
    from .models.config import ModelConfig
    from .presets import PRESETS, preset


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(source, __name__)
    value = module if source == f".{name}" else getattr(module, name)
    globals()[name] = value  # the next look-up finds it without calling this again
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
