"""Records as lm documents: each record's text field is one document (a JSON Lines object, a
Parquet row, a datasets row). Records whose text is empty or blank are skipped, as blank lines
of a text read ``one_per_line`` are; the held-out documents are chosen among the others."""

from __future__ import annotations

import os
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from ..documents import Documents, file_digest
from ..examples import TextDataset
from ..on_disk import OnDisk
from ..splits import held_out_count, is_held_out, percent
from .common import text_of
from .records import Records

__all__ = ["RecordDocuments", "read_records_lm"]


class RecordDocuments(Documents):
    """The texts of the field ``field`` of ``records``, one document a record, those of
    ``split`` when ``fraction`` holds some out (splits.py); ``count`` and ``chars``: how many
    documents and characters the split holds (counted when the records were checked)."""

    def __init__(
        self, records: Records, field: str, split: str, fraction: Fraction, count: int,
        chars: int, cache: str | None = None,
    ) -> None:  # fmt: skip
        self.records, self.field, self.split, self.fraction = records, field, split, fraction
        self._count, self._chars, self.cache = count, chars, cache

    def identity(self) -> dict[str, Any]:
        return {
            "files": [file_digest(f) for f in self.records.files()],
            "field": self.field,
            "held_out": str(self.fraction) if self.fraction else None,
            "split": self.split if self.fraction else None,
        }

    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        before = _stamps(self.records)
        for held, text in texts(self.records, self.field, self.fraction):
            if held == (self.split == "validation") or not self.fraction:
                yield iter((text,))
        if _stamps(self.records) != before:
            raise ValueError(
                f"{self.name} changed while it was encoded: allowed data that stay the same "
                "while a run reads them"
            )

    @property
    def count(self) -> int:
        return self._count

    @property
    def chars(self) -> int:
        return self._chars

    @property
    def label(self) -> str:
        return f"{self.name}, {self.count:,} documents"

    @property
    def name(self) -> str:
        return self.records.path.name


def texts(records: Records, field: str, fraction: Fraction) -> Iterator[tuple[bool, str]]:
    """(held out?, text) of each record whose text is not blank."""
    i = 0
    for n, (value,) in records.rows({"text": field}):
        text = text_of(value, "text", field, records.where(n))
        if text.strip():
            yield bool(fraction) and is_held_out(i, fraction), text
            i += 1


def read_records_lm(
    records: Records, split: str, fraction: Fraction, field: str, cache: str | None
) -> TextDataset:
    """The lm split of ``records``: checked and counted in one pass, its texts read again
    from disk when iterated or encoded (``OnDisk``, the token cache)."""
    count, chars = [0, 0], [0, 0]  # [kept, held out]
    for held, text in texts(records, field, fraction):
        count[held] += 1
        chars[held] += len(text)
    path = str(records.path)
    if not sum(count):
        raise ValueError(
            f"file {path!r}: no record has a non-empty {field!r} field: allowed records with "
            "some text"
        )
    if fraction:
        held_out_count(sum(count), fraction, f"{records.unit}s of text", path)
    k = int(split == "validation" and bool(fraction))
    docs = RecordDocuments(records, field, split, fraction, count[k], chars[k], cache)
    description = f"the {field!r} texts of {path}"
    if k:
        description = f"{percent(fraction)} of {description}, held out"
    return TextDataset(
        path, "lm", split, OnDisk(docs), description=description, part=docs,
        unit=records.unit,
    )  # fmt: skip


def _stamps(records: Records) -> list[tuple[int, int]]:
    """(size, modification time) of each file: what changes when a file is written."""
    return [(s.st_size, s.st_mtime_ns) for s in (os.stat(f) for f in records.files())]
