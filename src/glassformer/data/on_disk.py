"""The examples of an lm split on disk as a read-only sequence that reads the file only when
asked: ``TextDataset.examples`` (and ``lines``) of a text file, so that no process holds the
corpus to train a tokenizer or to encode it into the token cache.

``OnDisk(source)`` is the texts of the documents of ``source`` (documents.py), in order;
``OnDisk(source, "lines")`` the line on which each lies (text_lines.py). ``len`` is the count of
documents, known without reading; iterating reads the file once, a block at a time, and
``[i]`` reads up to document i (a whole text for a text file's one document: for a small file,
or for a reader who asks for it). ``texts()`` gives the texts in pieces of about
``text_pieces.PIECE_CHARS`` characters, for a tokenizer's training. Two OnDisk sequences are
equal when they read the same documents (no file is read); one is equal to a tuple or list of
the same items (which reads it). The records of a seq2seq or classification file are read the
same way (record_stream.RecordsOnDisk).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from .documents import Documents
from .text_pieces import pieces

__all__ = ["OnDisk"]

WHAT = ("texts", "lines")


class OnDisk(Sequence):
    """The documents of ``source`` (``what="texts"``) or their lines (``"lines"``), read from
    disk when asked (the module docstring)."""

    tasks: tuple[str, ...] = ("lm",)  # the tasks whose examples these are

    def __init__(self, source: Documents, what: str = "texts") -> None:
        if what not in WHAT:
            raise ValueError(f"what is {what!r}: allowed {', '.join(map(repr, WHAT))}")
        self.source, self.what = source, what

    def __len__(self) -> int:
        return self.source.count

    def __iter__(self) -> Iterator[Any]:
        if self.what == "lines":
            yield from self.source.line_numbers()  # type: ignore[attr-defined]
            return
        for document in self.source.documents(check=False):
            yield "".join(document)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return tuple(self)[i]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} of {n} {self.what} of {self.source.label}")
        return next(islice(iter(self), i % n, None))

    def texts(self) -> Iterator[str]:
        """Every document's text in pieces cut where tokenizers split anyway (text_pieces.py)."""
        for document in self.source.documents(check=False):
            yield from pieces(document)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OnDisk):
            return (self.source, self.what) == (other.source, other.what)
        if isinstance(other, tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.source, self.what))

    def __repr__(self) -> str:
        return f"OnDisk({len(self):,} {self.what} of {self.source.label})"
