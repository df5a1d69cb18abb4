"""Two-column text files (``label<TAB>text``, ``source,target`` ...; user_files.py's formats) as
the records of a seq2seq or classification split, read as a stream (record_stream.py).

The file's bytes are checked once by its scan (text_scan.py: UTF-8, no NUL byte, not empty; a
``.gz`` file decompressed as it is read, a file cut short refused in one line), which is kept by
the file's stat; ``TwoColumnRows.rows`` then reads the records a line at a time with the
``csv`` module (a ``.csv`` file's quoting; none in a tab-separated file).
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .documents import changed
from .formats.common import MIN_ROWS_CHECKED
from .formats.compressed import GZIP_ERRORS, open_bytes
from .record_stream import RecordRows, Row
from .text_scan import scan_text

__all__ = ["COLUMNS", "TwoColumnRows", "is_csv", "two_columns"]

COLUMNS: dict[str, tuple[str, str]] = {
    "seq2seq": ("source", "target"),
    "classification": ("label", "text"),
}


class TwoColumnRows(RecordRows):
    """The records of the two-column text file ``path`` for ``task``; its scan read (or made)
    with the cache folder ``cache``."""

    unit = "line"

    def __init__(self, path: Path, task: str, cache: str | None = None) -> None:
        self.path, self.task = path, task
        self.chars = scan_text(path, cache).chars  # the file's checks; kept by its stat

    def rows(self) -> Iterator[Row]:
        with contextlib.ExitStack() as files:
            raw = files.enter_context(open_bytes(self.path))
            text = files.enter_context(io.TextIOWrapper(raw, "utf-8-sig", newline=""))
            try:
                yield from two_columns(self.path, text, self.task, self.chars)
            except (*GZIP_ERRORS, UnicodeDecodeError):
                raise changed(self.path) from None  # the scan found it whole and UTF-8

    def files(self) -> list[Path]:
        return [self.path]

    def identity(self) -> dict[str, Any]:
        return {"columns": "csv" if is_csv(self.path) else "tsv"}

    def refuse(self, count: int, labels: list[str]) -> None:
        first, second = COLUMNS[self.task]
        sep = "," if is_csv(self.path) else "<TAB>"
        if not count:
            raise ValueError(
                f"file {str(self.path)!r}, line 1: no {first}{sep}{second} records: "
                f"{_allowed(self.path, self.task)}"
            )
        if count >= MIN_ROWS_CHECKED and len(labels) > count / 2:
            raise ValueError(
                f"file {str(self.path)!r}: the label column has {len(labels)} distinct values in "
                f"{count} rows; is the first column the text? allowed label{sep}text rows, "
                f"at least 2 a label on average (a text{sep}label header swaps the columns)"
            )

    @property
    def description(self) -> str:
        what = "pairs" if self.task == "seq2seq" else "labelled texts"
        return f"{what} {self.path}"


def two_columns(path: Path, text: Iterable[str], task: str, chars: int) -> Iterator[Row]:
    """(line number, (first, second)) for each non-blank record of the two-column file
    ``path`` whose ``chars`` characters come as the lines ``text`` (line ends kept), in the
    order of ``COLUMNS[task]`` (a header row naming the columns the other way round swaps
    them); a classification label without its surrounding spaces."""
    first, second = COLUMNS[task]
    if is_csv(path):
        reader = csv.reader(text, delimiter=",", strict=True)
    else:
        reader = csv.reader(text, delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
    allowed = _allowed(path, task)
    names = (first, second)  # the columns in the file's order
    header_seen = False
    line = 1  # the line on which the next record starts
    while True:
        start = line
        try:
            record = _next(reader, chars)
        except csv.Error as e:
            where = f"file {str(path)!r}, line {reader.line_num}"
            raise ValueError(f"{where}: {e}: {allowed}") from None
        if record is None:
            return
        line = reader.line_num + 1
        if not any(field.strip() for field in record):
            continue  # a blank line
        if not header_seen:
            header_seen = True
            named = tuple(f.strip().lower() for f in record)
            if named in ((first, second), (second, first)):
                names = named  # the header: skipped, and it orders the columns
                continue
        where = f"file {str(path)!r}, line {start}"
        if len(record) != 2:
            raise ValueError(f"{where}: found {len(record)} fields: {allowed}")
        for name, field in zip(names, record, strict=True):
            if not field.strip():
                raise ValueError(f"{where}: the {name} is empty: allowed non-empty fields")
        pair = (record[0], record[1]) if names[0] == first else (record[1], record[0])
        yield start, ((pair[0].strip(), pair[1]) if task == "classification" else pair)


def _next(reader: Any, chars: int) -> list[str] | None:
    """The next record of the csv ``reader``, None at the end. csv refuses a field longer than
    its limit (131,072 characters by default); a field as long as the file's text is allowed
    (a long text is then what data.overflow decides), the process's limit restored after."""
    limit = csv.field_size_limit(max(csv.field_size_limit(), chars + 1))
    try:
        return next(reader, None)
    finally:
        csv.field_size_limit(limit)


def _allowed(path: Path, task: str) -> str:
    first, second = COLUMNS[task]
    allowed = f"allowed exactly 2 fields, {first}{',' if is_csv(path) else '<TAB>'}{second}"
    if is_csv(path):
        allowed += ' (quote a field that contains a comma: "a, b")'
    return allowed


def is_csv(path: Path) -> bool:
    """A ``.csv`` file, or one gzipped (``.csv.gz``)."""
    name = path.name.lower()
    return name.endswith(".csv") or name.endswith(".csv.gz")
