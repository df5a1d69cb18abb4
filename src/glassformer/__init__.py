"""glassformer: transformers built from their formulas, and made to be looked inside.

The names below are imported on first use (PEP 562's module ``__getattr__``): ``import
glassformer`` and ``glassformer --version`` answer without loading PyTorch, and
``glassformer.DecoderLM`` or ``from glassformer import DecoderLM`` loads what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import drawing

__version__ = "0.1.0"

# ruff: noqa: F401 (the imports below are the list of public names)
if TYPE_CHECKING:  # the public names for type checkers: _SOURCES below (a test keeps them equal)
    from . import nn
    from .generation import generate, generate_text
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
    )
    from .models.config import ModelConfig
    from .models.presets import PRESETS, preset
    from .runs import Run, load_model


_SOURCES = {  # each public name -> the module that defines it (a submodule: itself)
    "nn": ".nn",
    "generate": ".generation", "generate_text": ".generation",
    "capture": ".inspect",
    "from_torch": ".interop", "to_torch": ".interop",
    "from_huggingface": ".interop.huggingface", "from_huggingface_dir": ".interop.huggingface",
    "to_huggingface": ".interop.huggingface",
    "DecoderLM": ".models", "EncoderClassifier": ".models", "EncoderDecoder": ".models",
    "EncoderMLM": ".models", "EncoderModel": ".models", "GlassformerModel": ".models",
    "ModelOutput": ".models",
    "ModelConfig": ".models.config",
    "PRESETS": ".models.presets", "preset": ".models.presets",
    "Run": ".runs", "load_model": ".runs",
}  # fmt: skip
__all__ = sorted(_SOURCES)


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


def _show_cache(cache: Any, what: str, layer: int, **options: Any) -> Any:
    """``cache.show(...)``: the explorer's view of a cached pass (explore.views.show_cache)."""
    from .explore.views import show_cache

    return show_cache(cache, what, layer, **options)


drawing.register("cache", _show_cache)
