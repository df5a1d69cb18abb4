"""Reading a model and its tokenizer from a folder: a glassformer checkpoint or run folder, or
a Hugging Face model directory (``--init-from``, and every command's ``--checkpoint``).

A Hugging Face directory is a ``config.json`` naming a ``model_type`` or ``architectures``
(glassformer's own config.json names neither), with the weights ``save_pretrained`` writes. It
is converted on loading (GPT-2, Llama, BERT, BART: ``glassformer.interop.huggingface``, which
needs ``transformers``), and its tokenizer is read by
``glassformer.tokenizers.load_hf_tokenizer``: ``tokenizer.json`` of any kind (byte-level BPE,
WordPiece, SentencePiece / Unigram), else GPT-2's ``vocab.json`` and ``merges.txt``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..structured import loads_json
from .errors import RunError

__all__ = ["is_huggingface_dir", "peek_huggingface", "read_huggingface"]


def is_huggingface_dir(path: Path) -> bool:
    """Does ``path`` hold a Hugging Face model (see the module docstring)?"""
    config = path / "config.json"
    if not config.is_file():
        return False  # a run folder
    try:
        meta = loads_json(config.read_bytes(), str(config))
    except (OSError, ValueError):
        return False  # the checkpoint loader says what is wrong with it
    return isinstance(meta, dict) and ("architectures" in meta or "model_type" in meta)


def read_huggingface(path: Path, option: str, tokenizer: Any = None):
    """The converted model of the Hugging Face directory ``path``, its tokenizer attached
    (``tokenizer``, else the directory's); a ``RunError`` naming ``option`` (the argument,
    ``init_from`` or ``checkpoint``) and the path when the tokenizer is missing or
    unreadable, the weights cannot be read or do not match config.json
    (interop/huggingface/folder_checks.py), or an optional package is missing. Weights left
    unused, and a head started anew, are warned of (a ``WeightsNote``, which the command
    line shows as a note)."""
    from ..interop.huggingface import from_huggingface_dir

    with _run_errors(path, option):
        if tokenizer is None:  # before the weights: a bad tokenizer fails fast
            tokenizer = _tokenizer(path, option)
        with _no_progress_bars():  # weights left unused: a WeightsNote warning
            return from_huggingface_dir(path, tokenizer=tokenizer)


def peek_huggingface(path: Path, option: str) -> tuple[type, dict[str, Any], Any]:
    """What the Hugging Face directory ``path`` holds, read without its weights: the
    glassformer class it converts to, its parsed ``config.json`` and its tokenizer (errors as
    ``read_huggingface``)."""
    from ..interop.huggingface import huggingface_dir_class

    with _run_errors(path, option):
        cls, meta = huggingface_dir_class(path)
        return cls, meta, _tokenizer(path, option)


def _tokenizer(path: Path, option: str):
    from ..tokenizers import load_hf_tokenizer

    tokenizer = load_hf_tokenizer(path)
    if tokenizer is None:
        raise RunError(
            f"{option} {path}: a Hugging Face model without a tokenizer; glassformer "
            "reads tokenizer.json (any kind), or GPT-2's vocab.json and merges.txt",
            argument=option,
        )
    return tokenizer


@contextlib.contextmanager
def _run_errors(path: Path, option: str) -> Iterator[None]:
    """A missing optional package or an unreadable file as a RunError naming ``option``."""
    try:
        yield
    except ImportError as err:  # an optional package is missing: the message says which
        raise RunError(f"{option} {path}: {err}", argument=option) from None
    except RunError:
        raise
    except (OSError, ValueError) as err:
        shown = str(err) if str(err).startswith(str(path)) else f"{path}: {err}"
        raise RunError(f"{option} {shown}", argument=option) from None


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' loading bars off while a model is read (a command prints one header)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # from_huggingface_dir says what to install
        yield
        return
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()
