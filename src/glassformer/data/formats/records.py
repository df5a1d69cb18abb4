"""Records (a JSON Lines file's objects, a Parquet file's rows, a datasets folder's rows) as
the examples of seq2seq and classification data: read as a stream, checked as the two-column
files of user_files.py are, and read from disk again when asked (record_stream.py), never held
in memory."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..examples import TextDataset
from ..record_stream import RecordRows, read_record_split
from .common import MIN_ROWS_CHECKED, ROLES, label_of, text_of

__all__ = ["FormatRows", "Records", "missing_field", "read_records"]


class Records(abc.ABC):
    """The records of one data source, read one after another from disk."""

    unit = "line"  # what a record's number counts: "line" (JSON Lines) or "row"

    def __init__(self, path: Path) -> None:
        self.path = path

    @abc.abstractmethod
    def columns(self) -> tuple[str, ...]:
        """The names of the fields (a JSON Lines file: those of its first record)."""

    @abc.abstractmethod
    def rows(self, fields: dict[str, str]) -> Iterator[tuple[int, tuple[object, ...]]]:
        """(the record's number from 1, its values of ``fields.values()``) for each record; a
        ``ValueError`` naming the record and the fields it has when one is missing
        (``fields``: {role: name}, e.g. {"text": "content"})."""

    def files(self) -> list[Path]:
        """The files the records are read from (their identity is the data's)."""
        return [self.path]

    def where(self, n: int) -> str:
        return f"file {str(self.path)!r}, {self.unit} {n}"


def missing_field(where: str, role: str, name: str, have: list[str] | tuple[str, ...]) -> str:
    """The message for a record without the field ``name``."""
    return (
        f"{where}: no field {name!r}; the record has the fields {sorted(have)}: allowed records "
        f"with a {name!r} field, or data.{role}_field naming the field that holds the {role}"
    )


class FormatRows(RecordRows):
    """The seq2seq or classification records of ``records``: ``fields`` ({role: name}) each a
    non-empty string (a label may be an integer)."""

    def __init__(self, records: Records, task: str, fields: dict[str, str]) -> None:
        self.records, self.task, self.fields = records, task, fields
        self.path, self.unit = records.path, records.unit

    def rows(self) -> Iterator[tuple[int, tuple[str, str]]]:
        roles, fields = ROLES[self.task], self.fields
        for n, values in self.records.rows(fields):
            where = self.records.where(n)
            pair = []
            for role, value in zip(roles, values, strict=True):
                if role == "label":
                    text = label_of(value, fields[role], where)
                else:
                    text = text_of(value, role, fields[role], where)
                if not text.strip():
                    raise ValueError(
                        f"{where}: the {role} (field {fields[role]!r}) is empty: allowed "
                        "non-empty fields"
                    )
                pair.append(text)
            yield n, (pair[0], pair[1])

    def files(self) -> list[Path]:
        return self.records.files()

    def identity(self) -> dict[str, Any]:
        return {"reader": type(self.records).__name__, "fields": self.fields}

    def refuse(self, count: int, labels: list[str]) -> None:
        path = str(self.path)
        if not count:
            raise ValueError(
                f"file {path!r}: no records: allowed records with the fields "
                f"{', '.join(self.fields.values())}"
            )
        if self.task == "classification" and count >= MIN_ROWS_CHECKED and len(labels) > count / 2:
            raise ValueError(
                f"file {path!r}: the label field {self.fields['label']!r} has {len(labels)} "
                f"distinct values in {count} records; is it the text? allowed at least 2 "
                "records a label on average (data.label_field names the field of the labels)"
            )

    @property
    def description(self) -> str:
        what = "pairs" if self.task == "seq2seq" else "labelled texts"
        return f"{what} {self.path}"


def read_records(
    records: Records,
    task: str,
    split: str,
    fraction: Fraction,
    fields: dict[str, str],
    cache: str | None = None,
) -> TextDataset:
    """The seq2seq or classification examples of ``records`` (``split``'s part when
    ``fraction`` holds some out), read as a stream (record_stream.py): each field a non-empty
    string (a label may be an integer); ``cache``: the token cache's folder for their scan and
    tokens (record_cache.py)."""
    return read_record_split(FormatRows(records, task, fields), split, fraction, cache)
