"""User data from files, one file per split, for the three tasks of the notes (seeds/001).

File formats (UTF-8; a byte-order mark is ignored; ``\\r\\n`` line ends are accepted):

* ``"lm"`` — a plain text file. By default the whole file is one document; with
  ``one_per_line=True`` every non-blank line is a document (e.g. a list of names).
* ``"seq2seq"`` — one pair per line, ``source<TAB>target`` (a ``.csv`` file uses
  ``source,target`` with csv quoting instead).
* ``"classification"`` — one example per line, ``label,text`` in a ``.csv`` file (csv
  quoting, so ``pos,"good, really"`` has the text ``good, really``; a quoted text may span
  lines) or ``label<TAB>text`` in any other file. An optional first line ``label,text``
  (``label<TAB>text``) is a header and is skipped. The class list is the sorted set of labels
  (surrounding spaces of a label are removed); there must be at least two classes.

In a two-column file blank lines are skipped; every other line must have exactly two fields,
neither empty (nor only spaces); texts are kept exactly as written. In a tab-separated file
quotes are ordinary characters. Anything else raises ``ValueError`` naming the file, the line
and what is allowed.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from .examples import TextDataset

COLUMNS: dict[str, tuple[str, str]] = {
    "seq2seq": ("source", "target"),
    "classification": ("label", "text"),
}


def read_file(
    path: str | os.PathLike[str], task: str, split: str = "train", *, one_per_line: bool = False
) -> TextDataset:
    """Read ``path`` in the format of ``task`` (see the module docstring) as one split."""
    p = Path(path)
    if task not in ("lm", *COLUMNS):
        raise ValueError(f"task is {task!r}: allowed 'lm', 'seq2seq', 'classification'")
    if one_per_line and task != "lm":
        raise ValueError(f"one_per_line is {one_per_line!r}: allowed only for task 'lm'")
    text = read_utf8(p)
    if task == "lm":
        text = text.replace("\r\n", "\n")
        docs = [ln for ln in text.split("\n") if ln.strip()] if one_per_line else [text]
        return TextDataset(str(p), "lm", split, docs, description=f"text file {p}")
    rows = read_two_columns(p, text, task)
    if task == "seq2seq":
        return TextDataset(str(p), task, split, [r for _, r in rows], description=f"pairs {p}")
    examples = [(label.strip(), txt) for _, (label, txt) in rows]
    labels = sorted({label for label, _ in examples})
    if len(labels) < 2:
        raise ValueError(
            f"file {str(p)!r}, line {rows[0][0]}: every example has the label {labels[0]!r}: "
            f"allowed at least 2 distinct labels for classification"
        )
    return TextDataset(
        str(p), task, split, examples, labels=labels, description=f"labelled texts {p}"
    )


def read_utf8(path: Path) -> str:
    """The text of ``path``, which must exist, be UTF-8, and not be empty or blank."""
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ValueError(f"file {str(path)!r} {what}: allowed a path to an existing text file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        bad = data[e.start : e.end]
        raise ValueError(
            f"file {str(path)!r}, line {line}: bytes {bad!r} are not valid UTF-8: "
            f"allowed UTF-8 text only (re-save the file as UTF-8)"
        ) from None
    if not text.strip():
        raise ValueError(
            f"file {str(path)!r}, line 1: the file is empty: allowed a file with some text"
        )
    return text


def read_two_columns(path: Path, text: str, task: str) -> list[tuple[int, tuple[str, str]]]:
    """(line number, (first, second)) for each non-blank record of a two-column file."""
    first, second = COLUMNS[task]
    if path.suffix.lower() == ".csv":
        sep, sep_name = ",", ","
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=",", strict=True)
    else:
        sep, sep_name = "\t", "<TAB>"
        reader = csv.reader(
            io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE, strict=True
        )
    allowed = f"allowed exactly 2 fields, {first}{sep_name}{second}"
    if sep == ",":
        allowed += ' (quote a field that contains a comma: "a, b")'
    rows: list[tuple[int, tuple[str, str]]] = []
    line = 1  # the line on which the next record starts
    try:
        for record in reader:
            start, line = line, reader.line_num + 1
            if not any(field.strip() for field in record):
                continue  # a blank line
            if not rows and [f.strip().lower() for f in record] == [first, second]:
                continue  # the optional header
            where = f"file {str(path)!r}, line {start}"
            if len(record) != 2:
                raise ValueError(f"{where}: found {len(record)} fields: {allowed}")
            for name, field in zip((first, second), record, strict=True):
                if not field.strip():
                    raise ValueError(f"{where}: the {name} is empty: allowed non-empty fields")
            rows.append((start, (record[0], record[1])))
    except csv.Error as e:
        raise ValueError(f"file {str(path)!r}, line {reader.line_num}: {e}: {allowed}") from None
    if not rows:
        raise ValueError(
            f"file {str(path)!r}, line 1: no {first}{sep_name}{second} records: {allowed}"
        )
    return rows
