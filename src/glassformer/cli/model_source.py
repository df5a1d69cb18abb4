"""The model behind ``--checkpoint DIR``: a glassformer checkpoint or run folder, or a Hugging
Face model directory.

A Hugging Face directory (a ``config.json`` with ``model_type`` or ``architectures``, weights
as ``save_pretrained`` writes them) is converted on loading (GPT-2, BERT, BART, Llama:
``glassformer.interop.huggingface``), and its tokenizer is read by
``glassformer.tokenizers.load_hf_tokenizer``: ``tokenizer.json`` of any kind (byte-level BPE,
WordPiece, SentencePiece / Unigram), else GPT-2's ``vocab.json`` + ``merges.txt``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..runs.record import load_checkpoint
from ..structured import loads_json
from .errors import UsageError

__all__ = ["is_huggingface_dir", "load_model_dir"]


def load_model_dir(path: Path, kinds: tuple[type, ...], command: str, device: str = "auto"):
    """(model with its tokenizer, folder) for ``glassformer COMMAND --checkpoint PATH``, where
    COMMAND takes models of the classes ``kinds``."""
    if not is_huggingface_dir(path):
        return load_checkpoint(path, kinds, command, device)
    model = _load_huggingface(path, device)
    if not isinstance(model, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        converted = model.config.extra.get("converted_from", type(model).__name__)
        raise UsageError(
            f"--checkpoint {path}: a Hugging Face {converted}, which converts to "
            f"{type(model).__name__}; glassformer {command} takes {names}"
        )
    return model, path


def is_huggingface_dir(path: Path) -> bool:
    """Does ``path`` hold a Hugging Face model: a config.json naming a ``model_type`` or
    ``architectures``, and not glassformer's own?"""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        meta = loads_json(config.read_bytes(), str(config))
    except (OSError, ValueError):
        return False  # the checkpoint loader says what is wrong with it
    return isinstance(meta, dict) and ("architectures" in meta or "model_type" in meta)


def _load_huggingface(path: Path, device: str):
    from ..interop.huggingface import from_huggingface_dir
    from ..tokenizers import load_hf_tokenizer
    from ..training import resolve_device

    with contextlib.suppress(ImportError):  # without transformers the loader says what to do
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no loading bars in a command's output
    try:
        tokenizer = load_hf_tokenizer(path)  # before the weights: a bad tokenizer fails fast
        if tokenizer is None:
            raise UsageError(
                f"--checkpoint {path}: a Hugging Face model without a tokenizer; glassformer "
                "reads tokenizer.json (any kind), or GPT-2's vocab.json and merges.txt"
            )
        model = from_huggingface_dir(path)
    except ImportError as err:  # an optional package is missing: the message says which
        raise UsageError(f"--checkpoint {path}: {err}") from None
    model.tokenizer = tokenizer
    return model.to(resolve_device(device))
