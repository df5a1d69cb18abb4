"""Records (a JSON Lines file's objects, a Parquet file's rows, a datasets folder's rows) as
the examples of seq2seq and classification data: read as a stream, checked as the two-column
files of user_files.py are, held in memory as a ``TextDataset``."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

from ..examples import TextDataset
from ..splits import split_records
from .common import MIN_ROWS_CHECKED, ROLES, label_of, text_of

__all__ = ["Records", "missing_field", "read_records"]


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


def read_records(
    records: Records,
    task: str,
    split: str,
    fraction: Fraction,
    fields: dict[str, str],
    cache: str | None = None,
) -> TextDataset:
    """The seq2seq or classification examples of ``records`` (``split``'s part when
    ``fraction`` holds some out): each field a non-empty string (a label may be an integer);
    ``cache``: the token cache's folder for their tokens (record_cache.py)."""
    roles = ROLES[task]
    examples: list[tuple[str, str]] = []
    lines: list[int] = []
    for n, values in records.rows(fields):
        where = records.where(n)
        pair = []
        for role, value in zip(roles, values, strict=True):
            if role == "label":
                text = label_of(value, fields[role], where)
            else:
                text = text_of(value, role, fields[role], where)
            if not text.strip():
                raise ValueError(
                    f"{where}: the {role} (field {fields[role]!r}) is empty: allowed non-empty "
                    "fields"
                )
            pair.append(text)
        examples.append((pair[0], pair[1]))
        lines.append(n)
    path = str(records.path)
    if not examples:
        raise ValueError(
            f"file {path!r}: no records: allowed records with the fields "
            f"{', '.join(fields.values())}"
        )
    labels: list[str] = []
    if task == "classification":
        labels = sorted({label for label, _ in examples})
        if len(examples) >= MIN_ROWS_CHECKED and len(labels) > len(examples) / 2:
            raise ValueError(
                f"file {path!r}: the label field {fields['label']!r} has {len(labels)} distinct "
                f"values in {len(examples)} records; is it the text? allowed at least 2 "
                "records a label on average (data.label_field names the field of the labels)"
            )
    what = "pairs" if task == "seq2seq" else "labelled texts"
    dataset = TextDataset(
        path, task, split, examples, labels=labels, description=f"{what} {path}", lines=lines,
        unit=records.unit, cache=cache,
    )  # fmt: skip
    return split_records(dataset, fraction, split) if fraction else dataset
