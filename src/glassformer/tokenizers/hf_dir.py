"""The tokenizer of a Hugging Face model directory, as ``save_pretrained`` writes it.

``load_hf_tokenizer(directory)`` prefers ``tokenizer.json`` (any kind, read by ``hf``: an
``HFTokenizer``, roles from ``tokenizer_config.json`` and ``special_tokens_map.json`` when
present); a directory with only GPT-2's ``vocab.json`` + ``merges.txt`` gives a
``BPETokenizer`` (``BPETokenizer.from_gpt2_files``); a directory with neither gives None.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..structured import loads_json
from .base import Tokenizer
from .bpe import BPETokenizer
from .hf import HFTokenizer

__all__ = ["ROLE_KEYS", "from_transformers_tokenizer", "hf_roles", "load_hf_tokenizer"]

# glassformer role -> the keys of tokenizer_config.json that name it, first found wins
ROLE_KEYS: dict[str, tuple[str, ...]] = {
    "<PAD>": ("pad_token",),
    "<BOS>": ("bos_token", "cls_token"),
    "<EOS>": ("eos_token", "sep_token"),
    "<UNK>": ("unk_token",),
    "<MASK>": ("mask_token",),
}
CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")  # the first naming a key wins


def load_hf_tokenizer(directory: str | os.PathLike[str]) -> Tokenizer | None:
    """The tokenizer of a Hugging Face model directory, or None when it ships none (see the
    module docstring). Bad files raise ``ValueError`` naming the file."""
    directory = Path(directory)
    if (directory / "tokenizer.json").is_file():
        return HFTokenizer.from_file(directory / "tokenizer.json", hf_roles(directory))
    vocab, merges = directory / "vocab.json", directory / "merges.txt"
    if vocab.is_file() and merges.is_file():
        return BPETokenizer.from_gpt2_files(vocab, merges)
    return None


def from_transformers_tokenizer(tokenizer: Any) -> HFTokenizer:
    """A ``transformers`` fast tokenizer (``PreTrainedTokenizerFast``, as ``AutoTokenizer``
    gives) as an ``HFTokenizer``: its ``tokenizer.json`` and the roles it names, read as
    ``hf_roles`` reads them from a model directory."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(
            f"tokenizer is a {type(tokenizer).__name__}; allowed a glassformer tokenizer or a "
            "transformers fast tokenizer (PreTrainedTokenizerFast)"
        )
    named = getattr(tokenizer, "special_tokens_map", None) or {}
    roles: dict[str, str] = {}
    for role, keys in ROLE_KEYS.items():
        for key in keys:
            token = named.get(key)
            if isinstance(token, str) and token:
                roles[role] = token
                break
    return HFTokenizer.from_str(backend.to_str(), roles, where=type(tokenizer).__name__)


def hf_roles(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Glassformer role (``"<PAD>"`` ...) -> token string, as the directory's
    ``tokenizer_config.json`` and ``special_tokens_map.json`` name them (``bos_token``, else
    ``cls_token``; ``eos_token``, else ``sep_token``); a role neither names is left out."""
    tables = [_read_table(Path(directory) / name) for name in CONFIG_FILES]
    roles: dict[str, str] = {}
    for role, keys in ROLE_KEYS.items():
        for table, key in ((t, k) for k in keys for t in tables):
            token = _token(table.get(key), key, table.get("__file__"))
            if token is not None:
                roles[role] = token
                break
    return roles


def _read_table(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = loads_json(path.read_bytes(), str(path))
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds {type(data).__name__}: allowed a JSON object")
    return {**data, "__file__": str(path)}


def _token(value: Any, key: str, where: Any) -> str | None:
    """A token as a config names it: a string, or an AddedToken object ``{"content": ...}``."""
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str) or not value:
        raise ValueError(
            f"{where}: {key} is {value!r}: allowed a token string or {{'content': string}}"
        )
    return value
