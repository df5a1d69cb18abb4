"""gzip-compressed text (``.txt.gz``, ``.jsonl.gz``, ``.tsv.gz``, ``.csv.gz``), decompressed as a
stream with the standard library's ``gzip``; a file cut short or damaged is refused naming the
file and where reading stopped.

A whole ``.txt.gz`` text (lm) is a :class:`GzipText`: its characters are counted in one pass and
read again, a block at a time, when they are encoded; it is never held whole."""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

from ..documents import TextPart, read_chars
from ..examples import TextDataset
from ..on_disk import OnDisk
from ..splits import held_out_count, percent

__all__ = ["GZIP_ERRORS", "GzipText", "gzip_bytes", "gzip_problem", "open_bytes", "read_gzip_text"]

GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def is_gzip(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def open_bytes(path: Path) -> BinaryIO:
    """The file's bytes, decompressed as they are read when it ends in ``.gz``."""
    return gzip.open(path, "rb") if is_gzip(path) else path.open("rb")  # type: ignore[return-value]


def gzip_problem(err: BaseException) -> str:
    """What a gzip error means, for a message."""
    if isinstance(err, EOFError):
        return "the compressed data end early (the file is cut short)"
    if isinstance(err, gzip.BadGzipFile):
        return f"not gzip data ({err})"
    return f"the compressed data are damaged ({err})"


def gzip_bytes(path: Path) -> bytes:
    """The decompressed bytes of ``path`` (for records, which are held in memory anyway)."""
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except GZIP_ERRORS as err:
        raise ValueError(
            f"file {str(path)!r}: {gzip_problem(err)}: allowed a whole gzip file"
        ) from None


@dataclass(frozen=True)
class GzipText(TextPart):
    """Characters ``start`` .. ``end`` of the decompressed text of the ``.gz`` file ``path``;
    its identity is that of the compressed file's bytes."""

    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        yield self._chars()  # decompressed; a change is caught by the file's stat either way

    def _chars(self) -> Iterator[str]:
        before = os.stat(self.path)
        yield from read_chars(self.path, self.start, self.end, opener=open_bytes)
        after = os.stat(self.path)
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
            raise ValueError(
                f"file {self.path!r} changed while it was encoded: allowed a file that stays "
                "the same while a run reads it"
            )


def count_chars(path: Path, end: int = sys.maxsize) -> tuple[int, int]:
    """(characters, newlines) of the first ``end`` characters of the decompressed text,
    checked to be UTF-8 text without NUL bytes."""
    chars = newlines = 0
    name = repr(str(path))
    try:
        for block in read_chars(path, 0, end, opener=open_bytes):
            nul = block.find("\x00")
            if nul >= 0:
                raise ValueError(
                    f"file {name}, line {newlines + block.count(chr(10), 0, nul) + 1}: a NUL "
                    "byte: the file holds binary data, not text: allowed UTF-8 text"
                )
            chars += len(block)
            newlines += block.count("\n")
    except GZIP_ERRORS as err:
        raise ValueError(
            f"file {name}, line {newlines + 1}: {gzip_problem(err)}: allowed a whole gzip file"
        ) from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"file {name}, line {newlines + 1}: bytes {err.object[err.start : err.end]!r} are "
            "not valid UTF-8: allowed UTF-8 text only"
        ) from None
    return chars, newlines


def read_gzip_text(path: Path, split: str, fraction: Fraction, cache: str | None) -> TextDataset:
    """A ``.txt.gz`` text as one lm document, or its first or last part (as a ``.txt`` file's:
    user_files.py), read from the compressed file when iterated or encoded."""
    n, _ = count_chars(path)
    if n == 0:
        raise ValueError(
            f"file {str(path)!r}, line 1: the file is empty: allowed a file with some text"
        )
    where, name = str(path.resolve()), str(path)
    start, end, line, description = 0, n, 1, f"compressed text file {path}"
    if fraction:
        cut = n - held_out_count(n, fraction, "characters", name)
        if split == "train":
            end = cut
        else:
            start, line = cut, count_chars(path, cut)[1] + 1
            description = f"the last {percent(fraction)} of {description}"
    part = GzipText(where, start, end, cache)
    return TextDataset(
        name, "lm", split, OnDisk(part), description=description, lines=[line],
        part=part,
    )  # fmt: skip
