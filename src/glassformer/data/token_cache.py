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
  Beside the token files it holds the scans of text files (``scans/``, text_scan.py) and the
  tokenizers trained on data (``tokenizers/``, tokenizer_cache.py).
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
* **Cores**: documents of at least ``PARALLEL_PIECES`` pieces are encoded on several cores, at
  most ``workers`` (``token_file``'s argument: a run's ``data.workers``, ``TextDataset.workers``;
  else ``$GLASSFORMER_WORKERS``, else every CPU the process may use): a char, word or BPE
  tokenizer in worker processes, each sent the tokenizer once and a batch of about
  ``ENCODE_CHARS`` characters at a time, the batches' ids written in order
  (tokenizers/parallel.py); a tokenizer.json through its library's batch encoder, ``workers``
  pieces a call. Memory stays bounded: a batch a worker. The tokens are
  those of one process; an error in a worker, or Ctrl-C, stops the workers and leaves no
  token file.
* **One process encodes**: processes that want the same token file (the ranks of a torchrun,
  two runs started together) take turns on an exclusive lock, ``<key>.lock`` in the cache
  folder (cache_lock.py): the first encodes; the others say that they wait (one line, when
  progress is shown) and then read its token file. The system releases the lock of a process
  that ends, killed or not, so a lock file left behind never blocks; the writer deletes it
  when done, and one left by a killed writer is deleted with the stale temporary files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import Work, say
from ..safe_write import replace_file
from ..tokenizers.parallel import EncodePool, Part, encode_parts, shareable, worker_count
from .cache_lock import exclusive, remove_stale
from .documents import Documents
from .text_pieces import pieces

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

__all__ = [
    "CACHE_ENV",
    "WORKERS_ENV",
    "CacheNote",
    "cache_folder",
    "encode_workers",
    "token_dtype",
    "token_file",
]

CACHE_ENV = "GLASSFORMER_CACHE"
WORKERS_ENV = "GLASSFORMER_WORKERS"  # the most processes that encode (default: every CPU)
FORMAT = 2  # bumped when the token files' layout or key changes
ENCODE_CHARS = 1 << 20  # characters encoded at a time (about; cut at a space or newline)
STALE_SECONDS = 3600  # a temporary file untouched this long is a dead writer's
SHOWN_CHARS = 1 << 20  # a shorter part is encoded in about a second: nothing is shown
PARALLEL_PIECES = 4  # documents of fewer pieces are encoded in this process alone


class CacheNote(UserWarning):
    """The token cache cannot be written (a full disk, a folder without write access): the
    tokens are kept in memory for this run instead."""


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
    source: Documents,
    tokenizer: Tokenizer,
    *,
    add_bos: bool = True,
    progress: str = "none",
    workers: int | None = None,
) -> np.ndarray:
    """The tokens ``[<BOS>] ids <EOS>`` of each document of ``source``, one after another, as a
    read-only memory map of their token file, encoded and written first when the cache lacks it
    (the module docstring), by at most ``workers`` processes (None: ``$GLASSFORMER_WORKERS``,
    else every CPU this process may use; 1: this process alone). ``progress`` ("bar", "lines",
    "none"; progress.py) shows the encoding, or says in one line that the tokens come from the
    cache (or that another process is encoding them), for documents of at least
    ``SHOWN_CHARS`` characters in all."""
    workers = encode_workers(workers)
    dtype = token_dtype(tokenizer.vocab_size)
    key = _key(source, tokenizer, add_bos)
    folder = cache_folder(source.cache)
    target = folder / f"{key}.{dtype.name}"
    if source.chars < SHOWN_CHARS:
        progress = "none"

    def encode(write: Callable[[np.ndarray], object]) -> None:
        _encode(source, tokenizer, dtype, add_bos, progress, write, workers)

    def waiting() -> None:
        if progress != "none":
            say(f"waiting for another process encoding {source.label} (lock file {lock})")

    tokens = _read(target, dtype, tokenizer, add_bos)
    lock = folder / f"{key}.lock"
    try:
        if tokens is None:
            folder.mkdir(parents=True, exist_ok=True)
            with exclusive(lock, waiting):
                tokens = _read(target, dtype, tokenizer, add_bos)  # another process's
                if tokens is None:
                    _clean_stale(folder)
                    replace_file(target, lambda tmp: _write_tokens(tmp, encode))
                    return np.memmap(target, dtype=dtype, mode="r")
    except OSError as err:
        message = (
            f"the token cache {folder} cannot be written ({err.strerror or err}); the tokens "
            f"of {source.name} are kept in memory for this run"
        )
        warnings.warn(message, CacheNote, stacklevel=2)
        kept: list[np.ndarray] = []
        encode(kept.append)
        return np.concatenate(kept)
    if progress != "none":
        say(f"{source.label}: {len(tokens):,} tokens read from the token cache {target}")
    return tokens


def encode_workers(workers: int | None = None) -> int:
    """The processes that encode: at most ``workers``, else ``$GLASSFORMER_WORKERS`` when set,
    and never more than the CPUs this process may use (``usable_cpus``)."""
    if workers is None and os.environ.get(WORKERS_ENV, "").strip():
        text = os.environ[WORKERS_ENV].strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(
                f"{WORKERS_ENV} is {text!r}: allowed an int >= 1 (the most processes that encode)"
            )
        workers = int(text)
    return worker_count(workers)


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
    workers: int = 1,
) -> None:
    """Encode the documents of ``source``, ``[<BOS>] ids <EOS>`` a document, a batch of about
    ``ENCODE_CHARS`` characters at a time, handing each batch's ids to ``write`` in order: in
    ``workers`` processes (a char, word or BPE tokenizer), or in batches of ``workers`` pieces
    that the tokenizer's ``encode_batch`` encodes at once (a tokenizer.json: on all cores);
    in this process alone when ``workers`` is 1 or the documents hold fewer than
    ``PARALLEL_PIECES`` pieces."""
    shown = Work(progress, source.chars, f"encoding {source.name}", "character")
    if source.chars < PARALLEL_PIECES * ENCODE_CHARS:
        workers = 1  # a few pieces: encoded sooner than processes start
    pooled = workers > 1 and shareable(tokenizer)
    size = ENCODE_CHARS if pooled else max(ENCODE_CHARS // workers, 1)
    sizes: deque[int] = deque()  # the characters of the batches handed on, not yet written

    def batches() -> Iterator[list[Part]]:
        for batch, chars in _batches(source, tokenizer, add_bos, size):
            sizes.append(chars)
            yield batch

    try:
        with EncodePool(tokenizer, workers, dtype) if pooled else contextlib.nullcontext() as pool:
            encoded = (
                pool.map(batches())
                if pool is not None
                else (encode_parts(tokenizer, batch, dtype) for batch in batches())
            )
            for ids in encoded:
                write(ids)
                shown.update(sizes.popleft())
    finally:
        shown.close()


def _batches(
    source: Documents, tokenizer: Tokenizer, add_bos: bool, size: int
) -> Iterator[tuple[list[Part], int]]:
    """The documents as batches of parts (``[<BOS>,] pieces of about ``size`` characters,
    <EOS>`` a document) of about ``ENCODE_CHARS`` characters, with their characters."""
    batch: list[Part] = []
    chars = 0
    for document in source.documents():
        if add_bos:
            batch.append(tokenizer.bos_id)
        for piece in _pieces(document, size):
            batch.append(piece)
            chars += len(piece)
            if chars >= ENCODE_CHARS:
                yield batch, chars
                batch, chars = [], 0
        batch.append(tokenizer.eos_id)
    if batch:
        yield batch, chars


def _pieces(blocks: Iterator[str], size: int | None = None) -> Iterator[str]:
    """``blocks`` cut into pieces of about ``size`` (default ``ENCODE_CHARS``) characters
    (text_pieces.py)."""
    return pieces(blocks, size or ENCODE_CHARS)


def _clean_stale(folder: Path) -> None:
    """Delete the temporary files of writers that stopped (killed, or a full disk), and the
    lock files of writers that were killed (cache_lock.remove_stale)."""
    now = time.time()
    for lock in folder.glob("*.lock"):
        remove_stale(lock, STALE_SECONDS)
    for tmp in folder.glob(".*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_SECONDS:
                tmp.unlink()
        except OSError:
            pass  # another process removed or renamed it
