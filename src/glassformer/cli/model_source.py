"""The model behind ``--checkpoint DIR``: a glassformer checkpoint or run folder
(``glassformer.runs.load_model``), or a Hugging Face model directory (read by
runs/model_folders.py, as ``--init-from`` reads it).
"""

from __future__ import annotations

from pathlib import Path

from ..runs import is_huggingface_dir, load_model, read_huggingface, resolve_checkpoint
from ..training import resolve_device
from .errors import UsageError
from .notes import shown_notes

__all__ = ["load_model_dir"]


def load_model_dir(path: Path, kinds: tuple[type, ...], command: str, device: str = "auto"):
    """(model with its tokenizer, folder) for ``glassformer COMMAND --checkpoint PATH``, where
    COMMAND takes models of the classes ``kinds``."""
    if not is_huggingface_dir(path):
        return _load_checkpoint(path, kinds, command, device)
    with shown_notes():  # weights left unused
        model = read_huggingface(path, "checkpoint").to(resolve_device(device))
    _check_kind(model, path, kinds, command, huggingface=True)
    return model, path


def _load_checkpoint(path: Path, kinds: tuple[type, ...], command: str, device: str):
    try:
        folder = resolve_checkpoint(path)
    except ValueError as err:
        raise UsageError(f"--checkpoint {err}") from None
    model = load_model(folder)
    _check_kind(model, folder, kinds, command)
    if model.tokenizer is None:
        raise UsageError(f"{folder} has no tokenizer.json; glassformer {command} needs one")
    return model.to(resolve_device(device)), folder


def _check_kind(model, path: Path, kinds, command: str, huggingface: bool = False) -> None:
    """A model of a class ``command`` does not take is refused, naming what it takes."""
    if isinstance(model, kinds):
        return
    names = " or ".join(k.__name__ for k in kinds)
    if huggingface:
        converted = model.config.extra.get("converted_from", type(model).__name__)
        raise UsageError(
            f"--checkpoint {path}: a Hugging Face {converted}, which converts to "
            f"{type(model).__name__}; glassformer {command} takes {names}"
        )
    raise UsageError(
        f"{path} holds a model of class {type(model).__name__}; glassformer {command} takes {names}"
    )
