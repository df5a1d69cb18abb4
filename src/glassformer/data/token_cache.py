"""Token files: the tokens of a text file's document, encoded once and read from a memory map.

The first time a text file (or the part of it a split holds) is encoded with a tokenizer, its
tokens ``<BOS> ids <EOS>`` are written to a token file in the cache folder; later runs,
``--resume`` and ``glassformer eval`` with the same tokenizer read that file through a numpy
memory map instead of encoding again, so no process holds the corpus as Python objects.

* **Where**: the folder named by ``data.cache`` (``read_file(..., cache=...)``), else by the
  environment variable ``GLASSFORMER_CACHE``, else ``$XDG_CACHE_HOME/glassformer/tokens``
  (``~/.cache/glassformer/tokens``). Deleting the folder, or any file in it, clears the cache.
* **Key**: the SHA-256 of the file's bytes, the part's characters (``start``, ``end``), whether
  a <BOS> opens it, and the SHA-256 of the tokenizer's JSON (``Tokenizer.to_dict``): a changed
  file or another tokenizer gets a new token file.
* **Format**: the ids, one after another, as ``uint16`` when every id fits (a vocabulary of up to
  65,536 ids: 2 bytes a token), else ``uint32``; the file name ends with the type
  (``<key>.uint16``).
* **Safe writing**: the tokens are written to a temporary file beside the token file and renamed
  into place when complete (``safe_write.replace_file``), so a run killed while encoding, or a
  full disk, leaves no token file that a later run would read; temporary files not written to
  for ``STALE_SECONDS`` are deleted, and a token file damaged otherwise (not a whole number of
  ids, or not framed by <BOS> ... <EOS>) is encoded again. A cache folder that cannot be
  written is noted and the tokens are kept in memory for the run.
* **Streaming**: the file is read ``READ_BYTES`` at a time and decoded incrementally (UTF-8, a
  byte-order mark removed, ``\\r\\n`` read as ``\\n``, as ``user_files`` reads it); the text is
  encoded about ``ENCODE_CHARS`` characters at a time, cut before a single space (else a single
  newline) between two other characters, where the char, word, GPT-2 and cl100k BPE tokenizers
  split the text anyway, so the tokens equal those of encoding the whole text at once.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import Work
from ..safe_write import replace_file

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

__all__ = ["CACHE_ENV", "TextPart", "cache_folder", "file_digest", "token_dtype", "token_file"]

CACHE_ENV = "GLASSFORMER_CACHE"
FORMAT = 1  # bumped when the token files' layout or key changes
READ_BYTES = 1 << 20  # bytes read from the text file at a time
ENCODE_CHARS = 1 << 20  # characters encoded at a time (about; cut at a space or newline)
MAX_PENDING = 8  # without a place to cut, at most this many ENCODE_CHARS wait
STALE_SECONDS = 3600  # a temporary file untouched this long is a dead writer's
SHOWN_CHARS = 1 << 20  # a shorter part is encoded in about a second: nothing is shown


@dataclass(frozen=True)
class TextPart:
    """Characters ``start`` .. ``end`` (of the text read as ``user_files`` reads it) of the text
    file ``path``: the one document of an lm split; ``cache``: the cache folder (None: the
    default, ``cache_folder``)."""

    path: str
    start: int
    end: int
    cache: str | None = None


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


def file_digest(path: Path) -> dict[str, int | str]:
    """``{"bytes": size, "sha256": hex digest}`` of the file, read a chunk at a time."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(READ_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def token_file(
    part: TextPart, tokenizer: Tokenizer, *, add_bos: bool = True, progress: str = "none"
) -> np.ndarray:
    """The tokens ``[<BOS>] ids <EOS>`` of ``part`` as a read-only memory map of its token file,
    encoded and written first when the cache lacks it (the module docstring). ``progress``
    ("bar", "lines", "none"; progress.py) shows the encoding, or says in one line that
    the tokens come from the cache, for a part of at least ``SHOWN_CHARS`` characters."""
    path = Path(part.path)
    digest = file_digest(path)
    dtype = token_dtype(tokenizer.vocab_size)
    key = _key(part, digest, tokenizer, add_bos)
    folder = cache_folder(part.cache)
    target = folder / f"{key}.{dtype.name}"
    what = f"{path.name}, characters {part.start:,}..{part.end:,}"
    if part.end - part.start < SHOWN_CHARS:
        progress = "none"
    tokens = _read(target, dtype, tokenizer, add_bos)
    if tokens is not None:
        if progress != "none":
            _say(f"{what}: {len(tokens):,} tokens read from the token cache {target}")
        return tokens

    def encode(write: Callable[[np.ndarray], object]) -> None:
        _encode(part, tokenizer, dtype, add_bos, digest, progress, write)

    try:
        folder.mkdir(parents=True, exist_ok=True)
        _clean_stale(folder)
        replace_file(target, lambda tmp: _write_tokens(tmp, encode))
    except OSError as err:
        _say(
            f"glassformer: note: the token cache {folder} cannot be written "
            f"({err.strerror or err}); the tokens of {path.name} are kept in memory for this run"
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


def _key(part: TextPart, digest: dict, tokenizer: Tokenizer, add_bos: bool) -> str:
    tokenizer_json = json.dumps(tokenizer.to_dict(), sort_keys=True, ensure_ascii=False)
    identity = {
        "format": FORMAT,
        "file": digest,
        "start": part.start,
        "end": part.end,
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
    part: TextPart,
    tokenizer: Tokenizer,
    dtype: np.dtype,
    add_bos: bool,
    digest: dict,
    progress: str,
    write: Callable[[np.ndarray], object],
) -> None:
    """Encode ``part`` a piece at a time, handing each piece's ids to ``write``; a
    ``ValueError`` when the file's bytes no longer match ``digest``."""
    path = Path(part.path)
    hasher = hashlib.sha256()
    shown = Work(progress, part.end - part.start, f"encoding {path.name}", "character")
    try:
        if add_bos:
            write(np.array([tokenizer.bos_id], dtype=dtype))
        for piece in _pieces(_chars(path, part.start, part.end, hasher)):
            write(np.array(tokenizer.encode(piece), dtype=dtype))
            shown.update(len(piece))
        write(np.array([tokenizer.eos_id], dtype=dtype))
    finally:
        shown.close()
    if hasher.hexdigest() != digest["sha256"]:
        raise ValueError(
            f"file {str(path)!r} changed while it was encoded: allowed a file that stays the "
            "same while a run reads it"
        )


def _chars(path: Path, start: int, end: int, hasher) -> Iterator[str]:
    """The characters ``start`` .. ``end`` of the file's text (UTF-8 without its byte-order
    mark, ``\\r\\n`` read as ``\\n``), a block at a time; every byte of the file goes through
    ``hasher``."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    at, held = 0, ""  # characters of the text passed; a "\r" that may start a "\r\n"
    with path.open("rb") as f:
        while True:
            data = f.read(READ_BYTES)
            hasher.update(data)
            text = held + decoder.decode(data, final=not data)
            held = ""
            if data and text.endswith("\r"):
                text, held = text[:-1], "\r"
            text = text.replace("\r\n", "\n")
            lo, hi = max(start - at, 0), min(end - at, len(text))
            if lo < hi:
                yield text[lo:hi]
            at += len(text)
            if not data:
                return


def _pieces(blocks: Iterator[str]) -> Iterator[str]:
    """``blocks`` joined and cut again into pieces of about ``ENCODE_CHARS`` characters, each cut
    before a single space (else newline) between two other characters (``_cut``)."""
    pending = ""
    for block in blocks:
        pending += block
        while len(pending) >= ENCODE_CHARS:
            cut = _cut(pending)
            if cut == 0 and len(pending) < MAX_PENDING * ENCODE_CHARS:
                break  # no place to cut yet: read on
            cut = cut or len(pending)  # none in MAX_PENDING pieces' worth: cut anywhere
            yield pending[:cut]
            pending = pending[cut:]
    if pending:
        yield pending


def _cut(text: str) -> int:
    """The last index i with ``text[i]`` a space (else a newline) and ``text[i - 1]``,
    ``text[i + 1]`` not whitespace; 0 when there is none."""
    for sep in (" ", "\n"):
        i = len(text) - 1
        while (i := text.rfind(sep, 1, i)) > 0:
            if not text[i - 1].isspace() and not text[i + 1].isspace():
                return i
    return 0


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
