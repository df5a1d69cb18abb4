"""Data in the formats it is downloaded in, for every task: which reader reads a path.

=====================  ==========================  =============================================
path                   tasks                       read by
=====================  ==========================  =============================================
``.jsonl``/``.ndjson``  lm, seq2seq, classification  jsonl.py: an object a line
``.parquet``           lm, seq2seq, classification  parquet.py (pyarrow, the ``data`` extra)
a ``datasets`` folder  lm, seq2seq, classification  datasets_folder.py (``datasets``, the extra)
a folder of ``.txt``   lm                          text_folder.py: each file a document
``*.gz``               as the name without ``.gz``  compressed.py: decompressed as a stream
=====================  ==========================  =============================================

A record's fields are ``text`` (lm), ``label`` and ``text`` (classification), ``source`` and
``target`` (seq2seq); ``text_field``, ``label_field``, ``source_field`` and ``target_field``
(``--set data.text_field=content``) name others. Seq2seq and classification records are held
in memory as a ``TextDataset`` (records.py); lm records and files are documents read from disk
when encoded (record_documents.py, text_folder.py, compressed.py), so that the token cache
encodes any size of data with bounded memory.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from ...named import naming
from ..documents import file_digest
from ..examples import TextDataset
from .common import ROLES, field_names
from .compressed import is_gzip, read_gzip_text
from .datasets_folder import DatasetsFolder, is_datasets_folder
from .jsonl import JsonLines, is_jsonl
from .parquet import ParquetRows
from .record_documents import read_records_lm
from .records import Records, read_records
from .text_folder import folder_digest, read_text_folder, text_files

__all__ = [
    "FORMAT_SUFFIXES",
    "data_digest",
    "guess_kind",
    "is_gzip",
    "is_records",
    "read_format",
    "read_gzip_text",
    "text_suffix",
]

FORMAT_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".gz")


def text_suffix(path: Path) -> str:
    """The suffix that says what the text is: ``.tsv`` for ``pairs.tsv.gz`` and ``pairs.tsv``."""
    p = path.with_suffix("") if is_gzip(path) else path
    return p.suffix.lower()


def _records(path: Path) -> Records | None:
    """The reader of a records format (JSON Lines, Parquet, datasets folder), else None."""
    if is_datasets_folder(path):
        return DatasetsFolder(path)
    if is_jsonl(path):
        return JsonLines(path)
    if path.suffix.lower() == ".parquet":
        return ParquetRows(path)
    return None


def is_records(path: Path) -> bool:
    """Whether ``path`` is a folder, a JSON Lines or a Parquet file (read by ``read_format``;
    other files are text, a ``.gz`` decompressed)."""
    return path.is_dir() or _records(path) is not None


def read_format(
    path: Path,
    task: str,
    split: str,
    fraction: Fraction,
    fields: dict[str, str | None],
    *,
    one_per_line: bool = False,
    cache: str | None = None,
) -> TextDataset:
    """One split of the folder, JSON Lines or Parquet file at ``path`` (``is_records``) as
    ``task``'s examples."""
    names = field_names(task, fields)
    records = _records(path)
    if records is None and path.is_dir():
        if task != "lm":
            raise ValueError(
                f"folder {str(path)!r} holds .txt files (each an lm document): allowed for "
                f"{task} a file or a folder written by datasets' save_to_disk"
            )
        return read_text_folder(path, split, fraction, cache)
    if one_per_line:
        raise ValueError(
            f"one_per_line is True for {str(path)!r}: allowed only for plain text (a JSON "
            "Lines, Parquet or datasets record is already one document)"
        )
    if records is None:
        raise ValueError(f"file {str(path)!r}: not a folder, JSON Lines or Parquet file")
    if task == "lm":
        return read_records_lm(records, split, fraction, names["text"], cache)
    return read_records(records, task, split, fraction, names, cache)


def guess_kind(path: Path, fields: dict[str, str | None]) -> str | None:
    """The kind of data at ``path`` ("lm" | "seq2seq" | "classification"), from its fields
    (a records format), a folder of texts (lm) or its suffix (``.txt``, ``.csv``); None when
    the suffix does not tell (``.tsv``, another one)."""
    records = _records(path)
    if records is None:
        if path.is_dir():
            return "lm"
        return {".txt": "lm", ".csv": "classification"}.get(text_suffix(path))
    columns = set(records.columns())
    for kind in ("classification", "seq2seq", "lm"):
        wanted = {fields.get(role) or role for role in ROLES[kind]}
        if wanted <= columns:
            return kind
    message = (
        f"{str(path)!r}: its fields {sorted(columns)} are no task's: allowed 'text' (lm), "
        "'label' and 'text' (classification), 'source' and 'target' (seq2seq), data.text_field "
        "(label_field, source_field, target_field) naming others, or the task given (run.task)"
    )
    raise naming(ValueError(message), names=["run.task"])


def data_digest(path: Path) -> dict[str, Any]:
    """The size and SHA-256 of the data at ``path``: a file's bytes; a folder's files (its
    ``.txt`` files, or every file of a datasets folder; text_folder.folder_digest)."""
    if not path.is_dir():
        return file_digest(path)
    files = DatasetsFolder(path).files() if is_datasets_folder(path) else text_files(path)
    return folder_digest(path, files)
