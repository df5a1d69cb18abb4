"""The model behind ``--checkpoint DIR``: a glassformer checkpoint or run folder, or a Hugging
Face model directory (read by runs/model_folders.py, as ``--init-from`` reads it).
"""

from __future__ import annotations

from pathlib import Path

from ..runs.model_folders import is_huggingface_dir, read_huggingface
from ..runs.record import load_checkpoint
from ..training import resolve_device
from .errors import UsageError

__all__ = ["load_model_dir"]


def load_model_dir(path: Path, kinds: tuple[type, ...], command: str, device: str = "auto"):
    """(model with its tokenizer, folder) for ``glassformer COMMAND --checkpoint PATH``, where
    COMMAND takes models of the classes ``kinds``."""
    if not is_huggingface_dir(path):
        return load_checkpoint(path, kinds, command, device)
    model = read_huggingface(path, "--checkpoint").to(resolve_device(device))
    if not isinstance(model, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        converted = model.config.extra.get("converted_from", type(model).__name__)
        raise UsageError(
            f"--checkpoint {path}: a Hugging Face {converted}, which converts to "
            f"{type(model).__name__}; glassformer {command} takes {names}"
        )
    return model, path
