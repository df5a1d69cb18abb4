"""User data from files, for the three tasks of the notes ("Formal Algorithms for Transformers").

File formats (UTF-8; a UTF-8 byte-order mark is ignored; ``\\r\\n`` line ends are accepted;
UTF-16, UTF-32, NUL bytes and other encodings are refused, see ``text_bytes``):

* ``"lm"`` — a plain text file. By default the whole file is one document; with
  ``one_per_line=True`` every non-blank line is a document (e.g. a list of names).
* ``"seq2seq"`` — one pair per line, ``source<TAB>target`` (a ``.csv`` file uses
  ``source,target`` with csv quoting instead).
* ``"classification"`` — one example per line, ``label,text`` in a ``.csv`` file (csv
  quoting, so ``pos,"good, really"`` has the text ``good, really``; a quoted text may span
  lines) or ``label<TAB>text`` in any other file. The class list is the sorted set of labels
  (surrounding spaces of a label are removed). A file of one label reads (evaluating on one
  class is legitimate); training needs at least two classes (runs/datasets.py refuses fewer).

A first line that names the two columns, in either order and any case (``label,text`` or
``text,label``; ``source,target`` or ``target,source``), is a header: it is skipped, and it says
which column is which. In a two-column file blank lines are skipped; every other line must have
exactly two fields, neither empty (nor only spaces); texts are kept exactly as written. In a
tab-separated file quotes are ordinary characters.

A label column in which most values are distinct is refused: with more classes than half the
rows (in a file of at least ``MIN_ROWS_CHECKED`` rows) a class has fewer than two examples on
average, too few to learn it or to score it, and such a column is almost always the text (the
columns swapped, with no header to say so) or an id.

JSON Lines and Parquet files, Hugging Face ``datasets`` folders and folders of ``.txt`` files
are read by formats/ (the fields a record gives each task, ``text_field``, ``label_field``,
``source_field`` and ``target_field`` naming others); a ``.gz`` file is the text of its name
without ``.gz``, decompressed as it is read. Files of formats that are not plain text
(``.json``, ``.zip``, ``.pdf``, ...; see ``NOT_TEXT``) are refused rather than read as text.

Held-out validation (``val_fraction``, e.g. 0.1): a file is one split, unless ``val_fraction``
holds part of it out. Then ``split="train"`` reads the rest and ``split="validation"`` the part
held out, the same part every time: the last ``val_fraction`` of a whole text's characters, or
``val_fraction`` of the records spread evenly (splits.py). Classification keeps the whole file's
class list in both parts, so class indices agree.

Anything else raises ``ValueError`` naming the file, the line and what is allowed. Every
example keeps the line it starts on (``TextDataset.lines``), so later messages name it too.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

from ..tasks import check_data_kind
from . import formats
from .documents import TextPart
from .examples import TextDataset
from .formats.compressed import gzip_bytes
from .on_disk import OnDisk
from .record_stream import read_record_split
from .splits import check_fraction, held_out_count, percent
from .text_bytes import decode_text
from .text_lines import read_lines
from .text_scan import TextScan, scan_text
from .two_columns import COLUMNS, TwoColumnRows

__all__ = ["COLUMNS", "NOT_TEXT", "read_file", "read_utf8"]
NOT_TEXT: frozenset[str] = frozenset({
    ".json", ".arrow", ".feather", ".avro", ".orc", ".pkl", ".pickle", ".npy", ".npz", ".pt",
    ".pth", ".safetensors", ".bin", ".h5", ".hdf5", ".bz2", ".xz", ".zst", ".zip", ".tar",
    ".tgz", ".7z", ".rar", ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ods", ".odt", ".rtf",
    ".png", ".jpg", ".jpeg", ".gif", ".mp3", ".wav", ".mp4",
})  # fmt: skip


def read_file(
    path: str | os.PathLike[str],
    task: str,
    split: str = "train",
    *,
    one_per_line: bool = False,
    val_fraction: float = 0.0,
    cache: str | None = None,
    text_field: str | None = None,
    label_field: str | None = None,
    source_field: str | None = None,
    target_field: str | None = None,
) -> TextDataset:
    """Read ``path`` in the format of ``task`` (see the module docstring) as one split; with
    ``val_fraction`` > 0, the part of the file for ``split`` (the module docstring). ``cache``:
    the folder of the token cache for lm documents on disk (a whole text, its lines, a folder,
    records) and for seq2seq and classification records (record_cache.py); None: the default,
    see token_cache.py. ``text_field`` ... ``target_field``: the fields of a JSON Lines, Parquet
    or datasets record that hold the text, label, source and target (None: ``"text"``,
    ``"label"``, ``"source"``, ``"target"``). An lm text file is never read whole: it is scanned
    once (text_scan.py) and its text read from disk when asked (on_disk.py)."""
    p = Path(path)
    fields = {"text": text_field, "label": label_field, "source": source_field,
              "target": target_field}  # fmt: skip
    check_data_kind(task)
    if one_per_line and task != "lm":
        raise ValueError(f"one_per_line is {one_per_line!r}: allowed only for task 'lm'")
    fraction = check_fraction(val_fraction)
    if cache is not None and (not isinstance(cache, str) or not cache.strip()):
        raise ValueError(f"cache is {cache!r}: allowed the path of a folder for token files")
    if formats.is_records(p):
        return formats.read_format(
            p, task, split, fraction, fields, one_per_line=one_per_line, cache=cache
        )
    given = {f"{role}_field": name for role, name in fields.items() if name is not None}
    if given:
        raise ValueError(
            f"{', '.join(f'{k}={v!r}' for k, v in given.items())} for file {str(p)!r}: allowed "
            "only for JSON Lines, Parquet and datasets folders (a text file has no fields)"
        )
    suffix = formats.text_suffix(p)
    if suffix in NOT_TEXT or (formats.is_gzip(p) and suffix in formats.FORMAT_SUFFIXES):
        raise ValueError(
            f"file {str(p)!r}: a {suffix} file is not plain text: allowed UTF-8 text (.txt for "
            "lm, .tsv or .csv for seq2seq and classification, each also gzipped as .gz), JSON "
            "Lines (.jsonl), Parquet (.parquet), a folder of .txt files or a datasets folder"
        )
    if task == "lm" and formats.is_gzip(p) and not one_per_line:
        return formats.read_gzip_text(p, split, fraction, cache)
    if task == "lm":
        scan = scan_text(p, cache)  # a .gz file decompressed as it is read
        if one_per_line:
            return _lines(p, scan, split, fraction, cache)
        return _whole_text(p, scan, split, fraction, cache)
    return read_record_split(TwoColumnRows(p, task, cache), split, fraction, cache)


def _lines(p: Path, scan: TextScan, split: str, fraction: Fraction, cache: str | None):
    """The non-blank lines of the text file, each a document, or those of ``split``
    (text_lines.py); read from the file when asked (on_disk.py)."""
    source = read_lines(p, split, fraction, scan.chars, scan.digest, cache)
    description = f"text lines {p}"
    if fraction and split == "validation":
        description = f"{percent(fraction)} of the records of {description}, held out"
    return TextDataset(
        str(p),
        "lm",
        split,
        OnDisk(source),
        description=description,
        lines=OnDisk(source, "lines"),
        part=source,
    )


def read_utf8(path: Path) -> str:
    """The text of ``path``, which must exist, be UTF-8 (no NUL bytes, no UTF-16; see
    ``text_bytes``), and not be empty or blank; a ``.gz`` file is decompressed first."""
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ValueError(f"file {str(path)!r} {what}: allowed a path to an existing text file")
    data = gzip_bytes(path) if path.suffix.lower() == ".gz" else path.read_bytes()
    text = decode_text(data, path)
    if not text.strip():
        raise ValueError(
            f"file {str(path)!r}, line 1: the file is empty: allowed a file with some text"
        )
    return text


def _whole_text(
    p: Path, scan: TextScan, split: str, fraction: Fraction, cache: str | None
) -> TextDataset:
    """The whole text as one document, or its first or last part (the module docstring),
    with where it lies in the file (``TextDataset.part``, for the token cache); the text is
    read from the file when asked (on_disk.py)."""
    where, n = str(p.resolve()), scan.chars
    start, end, description = 0, n, f"text file {p}"
    if fraction:
        cut = n - held_out_count(n, fraction, "characters", str(p))
        if split == "train":
            end = cut
        else:
            start, description = cut, f"the last {percent(fraction)} of text file {p}"
    part = TextPart(where, start, end, cache, digest=scan.digest, seek=scan.mark(start))
    lines = [scan.line_at(where, start)]
    return TextDataset(
        str(p), "lm", split, OnDisk(part), description=description, lines=lines, part=part
    )
