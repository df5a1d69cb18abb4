"""Token files: the tokens of an lm split's documents on disk, encoded once and read from a
memory map.

The first time the documents of a split (documents.py: the text of a file, or the part of it a
split holds, ...) are encoded with a tokenizer, their tokens ``<BOS> ids <EOS>``, document
after document, are written to a token file in the cache folder; later runs,
``--resume`` and ``glassformer eval`` with the same tokenizer read that file through a numpy
memory map instead of encoding again, so no process holds the corpus as Python objects.

* **Where**: the folder named by ``data.cache`` (``read_file(..., cache=...)``), else by the
  environment variable ``GLASSFORMER_CACHE``, else ``$XDG_CACHE_HOME/glassformer/tokens``
  (``~/.cache/glassformer/tokens``). Deleting the folder, or any file in it, clears the cache.
* **Key**: the documents' identity (``Documents.identity``: for a text file, the SHA-256 of its
  bytes and the part's characters ``start``, ``end``), whether a <BOS> opens each document, and
  the SHA-256 of the tokenizer's JSON (``Tokenizer.to_dict``): a changed file or another
  tokenizer gets a new token file.
* **Format**: the ids, one after another, as ``uint16`` when every id fits (a vocabulary of up to
  65,536 ids: 2 bytes a token), else ``uint32``; the file name ends with the type
  (``<key>.uint16``).
* **Safe writing**: the tokens are written to a temporary file beside the token file and renamed
  into place when complete (``safe_write.replace_file``), so a run killed while encoding, or a
  full disk, leaves no token file that a later run would read; temporary files not written to
  for ``STALE_SECONDS`` are deleted, and a token file damaged otherwise (not a whole number of
  ids, or not framed by <BOS> ... <EOS>) is encoded again. A cache folder that cannot be
  written is noted and the tokens are kept in memory for the run.
* **Streaming**: a document is read a block at a time (documents.py: a text file
  ``READ_BYTES`` at a time, decoded incrementally as ``user_files`` reads it); its text is
  encoded about ``ENCODE_CHARS`` characters at a time, cut before a single space (else a single
  newline) between two other characters, where the char, word, GPT-2 and cl100k BPE tokenizers
  split the text anyway, so the tokens equal those of encoding the whole text at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import Work
from ..safe_write import replace_file
from .documents import Documents
from .text_pieces import pieces

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

__all__ = ["CACHE_ENV", "cache_folder", "token_dtype", "token_file"]

CACHE_ENV = "GLASSFORMER_CACHE"
FORMAT = 2  # bumped when the token files' layout or key changes
ENCODE_CHARS = 1 << 20  # characters encoded at a time (about; cut at a space or newline)
STALE_SECONDS = 3600  # a temporary file untouched this long is a dead writer's
SHOWN_CHARS = 1 << 20  # a shorter part is encoded in about a second: nothing is shown


def cache_folder(setting: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the token files: ``setting``, else ``$GLASSFORMER_CACHE``, else
    ``$XDG_CACHE_HOME/glassformer/tokens`` (default ``~/.cache/glassformer/tokens``)."""
    if setting is not None and str(setting):
        return Path(setting).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "glassformer" / "tokens"


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds ids 0 .. vocab_size - 1 (uint16 or uint32)."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def token_file(
    source: Documents, tokenizer: Tokenizer, *, add_bos: bool = True, progress: str = "none"
) -> np.ndarray:
    """The tokens ``[<BOS>] ids <EOS>`` of each document of ``source``, one after another, as a
    read-only memory map of their token file, encoded and written first when the cache lacks it
    (the module docstring). ``progress`` ("bar", "lines", "none"; progress.py) shows the
    encoding, or says in one line that the tokens come from the cache, for documents of at
    least ``SHOWN_CHARS`` characters in all."""
    dtype = token_dtype(tokenizer.vocab_size)
    key = _key(source, tokenizer, add_bos)
    folder = cache_folder(source.cache)
    target = folder / f"{key}.{dtype.name}"
    if source.chars < SHOWN_CHARS:
        progress = "none"
    tokens = _read(target, dtype, tokenizer, add_bos)
    if tokens is not None:
        if progress != "none":
            _say(f"{source.label}: {len(tokens):,} tokens read from the token cache {target}")
        return tokens

    def encode(write: Callable[[np.ndarray], object]) -> None:
        _encode(source, tokenizer, dtype, add_bos, progress, write)

    try:
        folder.mkdir(parents=True, exist_ok=True)
        _clean_stale(folder)
        replace_file(target, lambda tmp: _write_tokens(tmp, encode))
    except OSError as err:
        _say(
            f"glassformer: note: the token cache {folder} cannot be written "
            f"({err.strerror or err}); the tokens of {source.name} are kept in memory for this "
            "run"
        )
        kept: list[np.ndarray] = []
        encode(kept.append)
        return np.concatenate(kept)
    return np.memmap(target, dtype=dtype, mode="r")


def _read(path: Path, dtype: np.dtype, tokenizer: Tokenizer, add_bos: bool) -> np.ndarray | None:
    """The memory map of the token file ``path``; None when there is none, or when it is not
    a whole number of ids framed by <BOS> (with ``add_bos``) and <EOS> (damaged: replaced)."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size == 0 or size % dtype.itemsize:
        return None
    tokens = np.memmap(path, dtype=dtype, mode="r")
    if tokens[-1] != tokenizer.eos_id or (add_bos and tokens[0] != tokenizer.bos_id):
        return None
    return tokens


def _key(source: Documents, tokenizer: Tokenizer, add_bos: bool) -> str:
    tokenizer_json = json.dumps(tokenizer.to_dict(), sort_keys=True, ensure_ascii=False)
    identity = {
        "format": FORMAT,
        "documents": source.identity(),
        "add_bos": add_bos,
        "tokenizer": hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def _write_tokens(tmp: Path, encode: Callable[[Callable[[np.ndarray], object]], None]) -> None:
    with tmp.open("wb") as f:
        encode(lambda ids: ids.tofile(f))
        f.flush()
        os.fsync(f.fileno())


def _encode(
    source: Documents,
    tokenizer: Tokenizer,
    dtype: np.dtype,
    add_bos: bool,
    progress: str,
    write: Callable[[np.ndarray], object],
) -> None:
    """Encode each document of ``source`` a piece at a time, handing each piece's ids to
    ``write``: ``[<BOS>] ids <EOS>`` a document."""
    shown = Work(progress, source.chars, f"encoding {source.name}", "character")
    bos = np.array([tokenizer.bos_id], dtype=dtype)
    eos = np.array([tokenizer.eos_id], dtype=dtype)
    try:
        for document in source.documents():
            if add_bos:
                write(bos)
            for piece in _pieces(document):
                write(np.array(tokenizer.encode(piece), dtype=dtype))
                shown.update(len(piece))
            write(eos)
    finally:
        shown.close()


def _pieces(blocks: Iterator[str]) -> Iterator[str]:
    """``blocks`` cut into pieces of about ``ENCODE_CHARS`` characters (text_pieces.py)."""
    return pieces(blocks, ENCODE_CHARS)


def _clean_stale(folder: Path) -> None:
    """Delete the temporary files of writers that stopped (killed, or a full disk)."""
    now = time.time()
    for tmp in folder.glob(".*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_SECONDS:
                tmp.unlink()
        except OSError:
            pass  # another process removed or renamed it


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
