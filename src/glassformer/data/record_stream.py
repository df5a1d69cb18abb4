"""Seq2seq and classification records read from their file as a stream, never held whole.

A records file (a two-column ``.tsv`` / ``.csv`` file, gzipped or not: two_columns.py; a JSON
Lines or Parquet file or a datasets folder: formats/records.py) is a :class:`RecordRows`: its
checked records, in order, a record at a time. ``read_record_split`` reads it once to scan it:
every record is checked (the messages of reading it whole), the records and characters of each
split are counted, the class list (classification) is collected, and each split's records are
hashed as the record cache keys them (record_digest.RecordHasher). The scan is kept in the cache
folder (scan_cache.py), keyed by the stat of the files, the task, the reader's settings and the
held-out fraction, so that a later run knows all this without reading a record.

The split is then a ``TextDataset`` whose examples (and lines) are a :class:`RecordsOnDisk`
sequence, read from the file again when asked: by the record cache, a chunk at a time, as it
encodes them (record_cache.py), by a tokenizer's training (``texts()``), or by the in-memory
encoders for a small split. Record i of the file is held out by splits.py's streaming rule, so
the records, their order, their lines and the class list are those of reading the file whole.
Memory does not grow with the file: a record at a time, besides the class list and the
``HASH_RECORDS`` records a hash holds.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from . import record_digest, scan_cache
from .documents import changed
from .examples import TextDataset
from .on_disk import OnDisk
from .splits import held_out_count, is_held_out, percent

__all__ = ["RecordPart", "RecordRows", "RecordsOnDisk", "read_record_split"]

Row = tuple[int, tuple[str, str]]  # (line or row from 1, (label, text) or (source, target))


class RecordRows(abc.ABC):
    """The records of one file (or folder) for a seq2seq or classification task."""

    path: Path
    task: str
    unit: str = "line"  # what a record's number counts: "line" or "row"

    @abc.abstractmethod
    def rows(self) -> Iterator[Row]:
        """Every record, in order, checked (a ``ValueError`` naming the record otherwise); a
        label without its surrounding spaces."""

    @abc.abstractmethod
    def files(self) -> list[Path]:
        """The files the records are read from."""

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """The settings that decide the records besides the files' bytes (e.g. the fields)."""

    @abc.abstractmethod
    def refuse(self, count: int, labels: list[str]) -> None:
        """Refuse a file of ``count`` records with the class list ``labels``: no record, or a
        label column of mostly distinct values (the messages of the reader's format)."""

    @property
    @abc.abstractmethod
    def description(self) -> str:
        """What the records are: ``pairs data/pairs.tsv``."""


@dataclass(frozen=True)
class RecordPart:
    """The records of ``reader`` that a split holds: those held out (``held`` True) by
    ``fraction`` or the others (False), or every record (None); ``count`` records of ``chars``
    characters of text (not the labels), whose ``RecordHasher`` digest is ``digest``."""

    reader: RecordRows = field(compare=False, repr=False)
    path: str
    task: str
    held: bool | None
    fraction: Fraction
    count: int
    chars: int
    digest: str

    def records(self, check: bool = False) -> Iterator[Row]:
        """The split's records, in order; with ``check``, hashed as they go, and a file whose
        records no longer match ``digest`` is refused at the end."""
        hasher = record_digest.RecordHasher() if check else None
        for i, (n, example) in enumerate(self.reader.rows()):
            if self.held is None or is_held_out(i, self.fraction) == self.held:
                if hasher is not None:
                    hasher.add(example)
                yield n, example
        if hasher is not None and hasher.hexdigest() != self.digest:
            raise changed(Path(self.path))

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def label(self) -> str:
        which = {None: "", True: ", held out", False: ", not held out"}[self.held]
        return f"{self.name}, records{which}"


class RecordsOnDisk(OnDisk):
    """The examples (``what="examples"``) or their lines (``"lines"``) of a ``RecordPart``,
    read from the file when asked (on_disk.py's rules)."""

    tasks = ("seq2seq", "classification")

    def __init__(self, source: RecordPart, what: str = "examples") -> None:
        if what not in ("examples", "lines"):
            raise ValueError(f"what is {what!r}: allowed 'examples', 'lines'")
        self.source, self.what = source, what  # type: ignore[assignment]

    def __iter__(self) -> Iterator[Any]:
        lines = self.what == "lines"
        for n, example in self.source.records():  # type: ignore[attr-defined]
            yield n if lines else example

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same items: to other records on disk when their records
        hash the same (their lines read and compared), to a tuple or list when read."""
        if isinstance(other, RecordsOnDisk):
            mine, theirs = self.source, other.source
            if self.what != other.what or (mine.count, mine.digest) != (  # type: ignore[attr-defined]
                theirs.count,
                theirs.digest,  # type: ignore[attr-defined]
            ):
                return False
            return self.what == "examples" or mine == theirs or tuple(self) == tuple(other)
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self.what, len(self), self.source.digest))  # type: ignore[attr-defined]

    def __add__(self, other: object) -> tuple:
        """The items of both, as a tuple (read: as a tuple of the records would add)."""
        return tuple(self) + tuple(other)  # type: ignore[arg-type]

    def __radd__(self, other: object) -> tuple:
        return tuple(other) + tuple(self)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"RecordsOnDisk({len(self):,} {self.what} of {self.source.label})"

    def texts(self) -> Iterator[str]:
        """Every text, in order: both sides of a pair; the text of a labelled one."""
        pair = self.source.task == "seq2seq"  # type: ignore[attr-defined]
        for _, (first, second) in self.source.records():  # type: ignore[attr-defined]
            if pair:
                yield first
            yield second


def read_record_split(
    reader: RecordRows, split: str, fraction: Fraction, cache: str | None
) -> TextDataset:
    """The records of ``split`` of ``reader`` (every record when ``fraction`` is 0), scanned
    (or their scan read from the cache folder ``cache``) and read from disk when asked."""
    labels, parts = _scan(reader, fraction, cache)
    held = split == "validation" if fraction else None
    count, chars, digest = parts["held" if held else "kept"]
    part = RecordPart(reader, str(reader.path), reader.task, held, fraction, count, chars, digest)
    description = reader.description
    if held:
        description = f"{percent(fraction)} of the records of {description}, held out"
    return TextDataset(
        str(reader.path), reader.task, split, RecordsOnDisk(part), labels=labels,
        description=description, lines=RecordsOnDisk(part, "lines"), unit=reader.unit,
        cache=cache,
    )  # fmt: skip


def _scan(
    reader: RecordRows, fraction: Fraction, cache: str | None
) -> tuple[list[str], dict[str, list]]:
    """(the class list, {"kept" / "held": [records, characters, digest]}) of the records."""
    key = {
        "files": scan_cache.file_stats(reader.files()),
        "task": reader.task,
        "reader": reader.identity(),
        "val_fraction": str(fraction),
        "hash_records": record_digest.HASH_RECORDS,
    }
    found = scan_cache.kept(cache, "records", key)
    if found is not None:
        return found["labels"], found["parts"]
    classify = reader.task == "classification"
    labels: set[str] = set()
    counts = {False: [0, 0], True: [0, 0]}  # held out or not: records, characters
    hashers = {False: record_digest.RecordHasher(), True: record_digest.RecordHasher()}
    for i, (_, example) in enumerate(reader.rows()):
        held = bool(fraction) and is_held_out(i, fraction)
        counts[held][0] += 1
        counts[held][1] += len(example[1]) + (0 if classify else len(example[0]))
        hashers[held].add(example)
        if classify:
            labels.add(example[0])
    n = counts[False][0] + counts[True][0]
    reader.refuse(n, sorted(labels))
    if fraction:
        held_out_count(n, fraction, "rows", str(reader.path))
    parts = {
        name: [*counts[held], hashers[held].hexdigest()]
        for name, held in (("kept", False), ("held", True))
    }
    scan_cache.keep(cache, "records", key, {"labels": sorted(labels), "parts": parts})
    return sorted(labels), parts
