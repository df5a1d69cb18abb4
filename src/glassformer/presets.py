"""``glassformer.presets``: the named model shapes, ``preset(name, **overrides)`` and
``PRESETS``, as the documentation imports them; they live in glassformer/models/presets.py."""

from .models.presets import PRESETS, preset

__all__ = ["PRESETS", "preset"]
