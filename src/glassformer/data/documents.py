"""Documents on disk: the documents of an lm split, read as a stream, never whole.

A :class:`Documents` says what its tokens depend on (``identity``: the data's bytes and which
part of them) and reads its documents one after another, each as blocks of text
(``documents``), so that the token cache (token_cache.py) encodes any size of data with
bounded memory. :class:`TextPart` is the one document of a text file (or the part of it that a
split holds); other readers (lines of a file, records of a JSON Lines or Parquet file, the
files of a folder) are Documents too.
"""

from __future__ import annotations

import abc
import codecs
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["READ_BYTES", "Documents", "TextPart", "changed", "file_digest", "read_chars"]

READ_BYTES = 1 << 20  # bytes read from a file at a time


class Documents(abc.ABC):
    """The documents of an lm split on disk (the module docstring)."""

    cache: str | None  # the token cache's folder (None: the default, token_cache.cache_folder)

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """What the documents' text depends on, as JSON (e.g. the file's size and SHA-256 and
        the characters read): the token cache's key, with the tokenizer's."""

    @abc.abstractmethod
    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        """Each document, in order, as blocks of its text; with ``check``, a ``ValueError``
        when the data on disk no longer match ``identity`` (changed while it was read: the
        token cache checks; a tokenizer's training and a reader of ``TextDataset.examples``
        need not)."""

    @property
    def count(self) -> int:
        """How many documents there are (``len`` of a TextDataset of them)."""
        raise NotImplementedError(f"{type(self).__name__} does not count its documents")

    @property
    @abc.abstractmethod
    def chars(self) -> int:
        """Characters in all documents (for progress)."""

    @property
    @abc.abstractmethod
    def label(self) -> str:
        """What the documents are, for messages: ``notes.txt, characters 0..1,296``."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """A short name for progress: ``notes.txt``."""


@dataclass(frozen=True)
class TextPart(Documents):
    """Characters ``start`` .. ``end`` (of the text read as ``user_files`` reads it) of the text
    file ``path``: the one document of an lm split; ``cache``: the cache folder (None: the
    default, ``token_cache.cache_folder``); ``digest``: the file's ``{"bytes", "sha256"}``
    when known (text_scan.py; None: hashed when asked); ``seek``: where a reader may start
    (text_scan.py's ``TextScan.mark(start)``; (0, 0): the start of the file)."""

    path: str
    start: int
    end: int
    cache: str | None = None
    digest: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    seek: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)

    def identity(self) -> dict[str, Any]:
        return {"file": self.file(), "start": self.start, "end": self.end}

    def file(self) -> dict[str, Any]:
        """The file's ``{"bytes": size, "sha256": hex digest}``."""
        return self.digest or file_digest(Path(self.path))

    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        if check:
            yield self._chars()
        else:
            yield read_chars(self.path, self.start, self.end, seek=self.seek)

    def _chars(self) -> Iterator[str]:
        path = Path(self.path)
        digest = self.file()
        hasher = hashlib.sha256()
        yield from read_chars(path, self.start, self.end, hasher)
        if hasher.hexdigest() != digest["sha256"]:
            raise changed(path)

    @property
    def count(self) -> int:
        return 1

    @property
    def chars(self) -> int:
        return self.end - self.start

    @property
    def label(self) -> str:
        return f"{self.name}, characters {self.start:,}..{self.end:,}"

    @property
    def name(self) -> str:
        return Path(self.path).name


def _open_bytes(path: Path) -> BinaryIO:
    return path.open("rb")


def changed(path: Path) -> ValueError:
    """The refusal of a file that changed while it was read for the token cache."""
    return ValueError(
        f"file {str(path)!r} changed while it was encoded: allowed a file that stays the "
        "same while a run reads it"
    )


def file_digest(path: Path) -> dict[str, int | str]:
    """``{"bytes": size, "sha256": hex digest}`` of the file, read a chunk at a time."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(READ_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def read_chars(
    path: str | os.PathLike[str],
    start: int,
    end: int,
    hasher: Any | None = None,
    seek: tuple[int, int] = (0, 0),
    *,
    opener: Callable[[Path], BinaryIO] | None = None,
) -> Iterator[str]:
    """The characters ``start`` .. ``end`` of the file's text (UTF-8 without its byte-order
    mark, ``\\r\\n`` read as ``\\n``), a block at a time; every byte of the file goes through
    ``hasher`` when one is given (then the whole file is read). ``seek``: (byte offset,
    characters before it) of a place where no character or ``\\r\\n`` is cut in two
    (text_scan.py's marks), at or before ``start``, to read from instead of the start (not
    with a ``hasher``). ``opener``: how the file's bytes are read (default ``Path.open("rb")``;
    e.g. ``gzip.open`` for a compressed text)."""
    byte, at = (0, 0) if hasher is not None else seek  # characters of the text passed
    decoder = codecs.getincrementaldecoder("utf-8" if byte else "utf-8-sig")()
    held = ""  # a "\r" that may start a "\r\n"
    with (opener or _open_bytes)(Path(path)) as f:
        if byte:
            f.seek(byte)
        while True:
            data = f.read(READ_BYTES)
            if hasher is not None:
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
            if not data or (hasher is None and at >= end):
                return
