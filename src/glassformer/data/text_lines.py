"""The non-blank lines of a text file as documents (``read_file(..., one_per_line=True)``),
read as a stream, never whole.

Each non-blank line (one with a character that is not a space) is a document; with a
``val_fraction`` the records that splits.py holds out (one line in every 1/f, decided by the
line's index among the non-blank lines as the file streams) are the validation split's, the
others the training split's. ``read_lines`` counts a split's lines and characters in one pass
(no line is kept), and refuses a file with too few lines to hold out one. The counts are kept in
the cache folder (scan_cache.py), keyed by the file's digest (its scan, text_scan.py, itself
kept by the file's stat) and the fraction, so that a later run does not read the file to count.

A gzipped text (``.gz``) is decompressed as it is read, a block at a time; a change to it while
it is read is caught by its stat (size, modification time) instead of its hash.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from . import scan_cache
from .documents import Documents, changed, read_chars
from .formats.compressed import GZIP_ERRORS, is_gzip, open_bytes
from .splits import held_out_count, is_held_out

__all__ = ["LineDocuments", "read_lines"]


@dataclass(frozen=True)
class LineDocuments(Documents):
    """The non-blank lines of the text file ``path`` (its ``total`` characters) that the split
    ``split`` holds ("train", "validation"; None: every line) with ``fraction`` held out;
    ``count`` of them, of ``chars`` characters in all; ``digest``: the file's ``{"bytes",
    "sha256"}`` (text_scan.py)."""

    path: str
    split: str | None
    fraction: Fraction
    total: int
    cache: str | None = None
    digest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    counted: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)

    def identity(self) -> dict[str, Any]:
        split = {"split": self.split, "val_fraction": str(self.fraction)} if self.split else {}
        return {"file": self.digest, "lines": "non-blank", **split}

    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        for _, line in self.lines(check):
            yield iter((line,))

    def lines(self, check: bool = False) -> Iterator[tuple[int, str]]:
        """(line number, text) of each line of the split, in order; with ``check``, every byte
        of the file is hashed and a file that no longer matches ``digest`` is refused."""
        gz = is_gzip(Path(self.path))
        hasher = hashlib.sha256() if check and not gz else None
        before = _stamp(self.path)
        try:
            for index, (number, line) in enumerate(_non_blank(self.path, self.total, hasher)):
                if self.split is None or is_held_out(index, self.fraction) == (
                    self.split == "validation"
                ):
                    yield number, line
        except GZIP_ERRORS:
            raise changed(Path(self.path)) from None  # it was whole when it was scanned
        if hasher is not None and hasher.hexdigest() != self.digest["sha256"]:
            raise changed(Path(self.path))
        if check and gz and _stamp(self.path) != before:
            raise changed(Path(self.path))

    def line_numbers(self) -> Iterator[int]:
        """The line on which each document lies (from 1)."""
        return (number for number, _ in self.lines())

    @property
    def count(self) -> int:
        return self.counted[0]

    @property
    def chars(self) -> int:
        return self.counted[1]

    @property
    def label(self) -> str:
        held = f", the {self.split} lines" if self.split else ""
        return f"{self.name}, non-blank lines{held}"

    @property
    def name(self) -> str:
        return Path(self.path).name


def read_lines(
    path: Path,
    split: str,
    fraction: Fraction,
    total: int,
    digest: dict[str, Any],
    cache: str | None,
) -> LineDocuments:
    """The lines of ``split`` of the text file ``path`` of ``total`` characters (the module
    docstring), counted."""
    where = str(path.resolve())
    every = LineDocuments(where, None, fraction, total, cache, digest)
    key = {"file": digest, "lines": "non-blank", "val_fraction": str(fraction)}
    found = scan_cache.kept(cache, "lines", key)
    if found is not None:
        counts = {True: found["held"], False: found["kept"]}
    else:
        counts = {True: [0, 0], False: [0, 0]}  # held out or not: lines, characters
        for index, (_, line) in enumerate(every.lines()):
            count = counts[bool(fraction) and is_held_out(index, fraction)]
            count[0] += 1
            count[1] += len(line)
        scan_cache.keep(cache, "lines", key, {"held": counts[True], "kept": counts[False]})
    if not fraction:
        return LineDocuments(where, None, fraction, total, cache, digest, tuple(counts[False]))
    held_out_count(counts[True][0] + counts[False][0], fraction, "lines", str(path))
    counted = tuple(counts[split == "validation"])
    return LineDocuments(where, split, fraction, total, cache, digest, counted)


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _non_blank(path: str, total: int, hasher: Any | None) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line of the file's ``total`` characters (a
    ``.gz`` file decompressed)."""
    number, rest = 0, ""  # lines passed; the start of a line whose end is not read yet
    opener = open_bytes if is_gzip(Path(path)) else None
    for block in read_chars(path, 0, total, hasher, opener=opener):
        lines = (rest + block).split("\n")
        rest = lines.pop()
        for line in lines:
            number += 1
            if line.strip():
                yield number, line
    if rest.strip():
        yield number + 1, rest
