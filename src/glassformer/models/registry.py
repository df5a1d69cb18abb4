"""The model classes by name: the ``architecture`` that a checkpoint's config.json records.

``GlassformerModel.__init_subclass__`` (base.py) fills ``ARCHITECTURES``; checkpoints
(checkpoint.py) and size estimates (size.py) look classes up here, so that neither needs the
module of the model classes (which calls them to save and load).
"""

from __future__ import annotations

__all__ = ["ARCHITECTURES", "model_class"]

ARCHITECTURES: dict[str, type] = {}


def model_class(name: str) -> type:
    """The registered model class called ``name``; a ValueError names the known ones."""
    if not isinstance(name, str) or name not in ARCHITECTURES:
        raise ValueError(f"architecture {name!r} is not known; allowed {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[name]
