"""Record files: the tokens of a seq2seq or classification split, encoded once into the token
cache and read from memory maps.

Held in memory, each encoded record costs a dict and one or two small tensors, several hundred
bytes besides its tokens, and every run encodes every record again: gigabytes and minutes for a
file of millions of rows. Here the records of a split are encoded once per tokenizer into flat
arrays on disk, and later runs, ``--resume`` and ``glassformer eval`` read them through numpy
memory maps: 2 bytes a token (``token_dtype``) and 8 bytes a record for its offset.

* **Where**: the token cache's folder (token_cache.py: ``data.cache``, else
  ``$GLASSFORMER_CACHE``, else ``~/.cache/glassformer/tokens``), a folder ``<key>.records``.
* **Key**: the SHA-256 of the records themselves (a chunk at a time, the lengths of its fields
  and their text as UTF-8, so the same records give the same key however they were read: a
  file, a built-in task, a list), the task, the class list (classification: the class
  indices depend on it), whether a <BOS> opens each text, and the SHA-256 of the tokenizer's
  JSON (``Tokenizer.to_dict``).
* **Layout**: for each field (``text``; or ``source`` and ``target``) ``<field>.uint16`` (or
  ``.uint32``): every record's ids ``[<BOS>] ids <EOS>``, untruncated, one record after another;
  ``<field>.offsets.int64``: where each record's ids start, then the total (n + 1 numbers); for
  classification ``labels.int32``: each record's class index. ``max_len`` and ``overflow`` are
  applied when a dataset is made of them (record_dataset.py), so a run with another
  ``max_len`` reads the same files.
* **Safe**: the folder is filled aside and renamed into place when complete
  (``safe_write.replace_dir``), so a run killed while encoding, or a full disk, leaves nothing
  a later run would read; temporary folders untouched for ``STALE_SECONDS`` are deleted. A
  folder whose files disagree (sizes, offsets, a record not closed by <EOS>, a class index out
  of range) is encoded again. A cache folder that cannot be written is noted, and the arrays
  are kept in memory for the run.
* **Bounded memory**: records are encoded about ``ENCODE_CHARS`` characters at a time with
  ``tokenizer.encode_batch`` and appended to the files.
* **When**: only splits of at least ``CACHE_CHARS`` characters (``uses_record_cache``). A
  smaller one (the built-in synthetic tasks: 10,000 examples of about ten characters; a file of
  a few thousand messages) is encoded in memory in well under a second and some megabytes,
  less than hashing it and writing files would cost, and leaves no files behind.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import Work
from ..safe_write import replace_dir
from .examples import TextDataset
from .token_cache import SHOWN_CHARS, STALE_SECONDS, cache_folder, token_dtype

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

__all__ = [
    "CACHE_CHARS",
    "FIELDS",
    "RecordTokens",
    "record_chars",
    "record_tokens",
    "records_digest",
    "uses_record_cache",
]

FORMAT = 1  # bumped when the record folders' layout or key changes
CACHE_CHARS = 1 << 20  # splits of this many characters or more go through the cache
ENCODE_CHARS = 1 << 20  # characters of records encoded at a time (about)
HASH_RECORDS = 8192  # records hashed at a time
FIELDS: dict[str, tuple[str, ...]] = {"seq2seq": ("source", "target"), "classification": ("text",)}

Write = Callable[[str, np.ndarray], object]  # (file name, array to append)


@dataclass(frozen=True)
class RecordTokens:
    """The ids of a split's n records: for each field (FIELDS) ``(tokens (N,), offsets
    (n + 1,))``, record r's ids being ``tokens[offsets[r]:offsets[r + 1]]``; ``labels`` (n,)
    int32 class indices for classification, else None."""

    fields: dict[str, tuple[np.ndarray, np.ndarray]]
    labels: np.ndarray | None

    def __len__(self) -> int:
        return len(next(iter(self.fields.values()))[1]) - 1

    @property
    def num_tokens(self) -> int:
        return sum(len(tokens) for tokens, _ in self.fields.values())


def record_chars(dataset: TextDataset) -> int:
    """Characters to encode in the split: its texts (both sides of a pair)."""
    return sum(map(len, dataset.texts()))


def uses_record_cache(dataset: TextDataset) -> bool:
    """Whether the records of ``dataset`` are encoded into the cache (the module docstring)."""
    return dataset.task in FIELDS and len(dataset) > 0 and record_chars(dataset) >= CACHE_CHARS


def record_tokens(
    dataset: TextDataset, tokenizer: Tokenizer, *, add_bos: bool = True, progress: str = "none"
) -> RecordTokens:
    """The ids of the records of ``dataset`` (seq2seq or classification) from their folder in
    the token cache, encoded and written first when the cache lacks it (the module docstring).
    ``add_bos``: classification only (a seq2seq source or target never has one). ``progress``
    ("bar", "lines", "none") shows the encoding, or says in one line that the records come
    from the cache, for splits of at least ``SHOWN_CHARS`` characters."""
    add_bos = add_bos and dataset.task == "classification"
    dtype = token_dtype(tokenizer.vocab_size)
    folder = cache_folder(dataset.cache)
    target = folder / f"{_key(dataset, tokenizer, add_bos)}.records"
    chars = record_chars(dataset)
    if chars < SHOWN_CHARS:
        progress = "none"
    name = f"{Path(dataset.name).name} ({dataset.split})"
    found = _read(target, dataset, dtype, tokenizer.eos_id)
    if found is not None:
        if progress != "none":
            _say(
                f"{name}: {len(found):,} records, {found.num_tokens:,} tokens read from the "
                f"token cache {target}"
            )
        return found

    def encode(write: Write) -> None:
        shown = Work(progress, len(dataset), f"encoding {name}", "record")
        try:
            _encode(dataset, tokenizer, dtype, add_bos, write, shown.update)
        finally:
            shown.close()

    written: list[RecordTokens] = []

    def fill(tmp: Path) -> None:
        _write_files(tmp, encode)
        # mapped before the rename: the maps keep these files even if another process
        # replaces the folder later
        found = _read(tmp, dataset, dtype, tokenizer.eos_id)
        if found is None:
            raise RuntimeError(f"the record files written in {tmp} do not read back")
        written.append(found)

    try:
        folder.mkdir(parents=True, exist_ok=True)
        _clean_stale(folder)
        replace_dir(target, fill)
    except OSError as err:
        found = _read(target, dataset, dtype, tokenizer.eos_id)
        if found is not None:  # another process wrote the same folder meanwhile
            return found
        _say(
            f"glassformer: note: the token cache {folder} cannot be written "
            f"({err.strerror or err}); the tokens of {name} are kept in memory for this run"
        )
        kept: dict[str, list[np.ndarray]] = {}
        encode(lambda file, ids: kept.setdefault(file, []).append(ids))
        return _arrays(dataset.task, dtype, {f: np.concatenate(a) for f, a in kept.items()})
    return written[0]


def records_digest(dataset: TextDataset) -> str:
    """The SHA-256 of the records of ``dataset`` (the module docstring's key): a chunk of
    records at a time, the lengths of their fields (characters), then their text as UTF-8."""
    records = hashlib.sha256()
    for start in range(0, len(dataset.examples), HASH_RECORDS):
        texts = list(itertools.chain.from_iterable(dataset.examples[start : start + HASH_RECORDS]))
        records.update(np.fromiter(map(len, texts), "<i8", len(texts)).tobytes())
        records.update("".join(texts).encode("utf-8", "surrogatepass"))
    return records.hexdigest()


def _key(dataset: TextDataset, tokenizer: Tokenizer, add_bos: bool) -> str:
    tokenizer_json = json.dumps(tokenizer.to_dict(), sort_keys=True, ensure_ascii=False)
    identity = {
        "format": FORMAT,
        "task": dataset.task,
        "records": records_digest(dataset),
        "labels": list(dataset.labels),
        "add_bos": add_bos,
        "tokenizer": hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def _files(task: str, dtype: np.dtype) -> dict[str, np.dtype]:
    """The files of a record folder and their types (the module docstring)."""
    files = {}
    for field in FIELDS[task]:
        files[f"{field}.{dtype.name}"] = dtype
        files[f"{field}.offsets.int64"] = np.dtype(np.int64)
    if task == "classification":
        files["labels.int32"] = np.dtype(np.int32)
    return files


def _arrays(task: str, dtype: np.dtype, arrays: dict[str, np.ndarray]) -> RecordTokens:
    fields = {f: (arrays[f"{f}.{dtype.name}"], arrays[f"{f}.offsets.int64"]) for f in FIELDS[task]}
    return RecordTokens(fields, arrays.get("labels.int32"))


def _read(folder: Path, dataset: TextDataset, dtype: np.dtype, eos: int) -> RecordTokens | None:
    """The memory maps of the record folder; None when it is missing or its files disagree
    with each other or with the ``dataset``'s count of records and classes (damaged)."""
    arrays = {}
    for name, kind in _files(dataset.task, dtype).items():
        try:
            size = (folder / name).stat().st_size
        except OSError:
            return None
        if size == 0 or size % kind.itemsize:
            return None
        arrays[name] = np.memmap(folder / name, dtype=kind, mode="r")
    found = _arrays(dataset.task, dtype, arrays)
    n = len(dataset)
    for tokens, offsets in found.fields.values():
        if len(offsets) != n + 1 or offsets[0] != 0 or offsets[-1] != len(tokens):
            return None
        if np.any(offsets[1:] <= offsets[:-1]) or np.any(tokens[offsets[1:] - 1] != eos):
            return None  # every record holds at least its <EOS>, and ends with it
    labels = found.labels
    if labels is not None and (
        len(labels) != n or labels.min() < 0 or labels.max() >= len(dataset.labels)
    ):
        return None
    return found


def _write_files(folder: Path, encode: Callable[[Write], None]) -> None:
    """Fill the new ``folder`` with the record files, appending as ``encode`` writes."""
    handles = {}
    try:

        def write(name: str, array: np.ndarray) -> None:
            if name not in handles:
                handles[name] = (folder / name).open("wb")
            array.tofile(handles[name])

        encode(write)
        for f in handles.values():
            f.flush()
            os.fsync(f.fileno())
    finally:
        for f in handles.values():
            f.close()


def _encode(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    dtype: np.dtype,
    add_bos: bool,
    write: Write,
    done: Callable[[int], object],
) -> None:
    """Encode the records a chunk at a time, handing each file's new part to ``write``."""
    fields = FIELDS[dataset.task]
    classify = dataset.task == "classification"
    ends = dict.fromkeys(fields, 0)
    for field in fields:
        write(f"{field}.offsets.int64", np.zeros(1, np.int64))
    index = {label: k for k, label in enumerate(dataset.labels)}
    for chunk in _chunks(dataset.examples):
        columns = list(zip(*chunk, strict=True))
        if classify:
            write("labels.int32", _label_ids(columns[0], index))
        for field, texts in zip(fields, columns[1:] if classify else columns, strict=True):
            ids = tokenizer.encode_batch(texts, add_bos=add_bos, add_eos=True)
            lengths = np.fromiter(map(len, ids), np.int64, len(ids))
            count = int(lengths.sum())
            write(
                f"{field}.{dtype.name}",
                np.fromiter(itertools.chain.from_iterable(ids), dtype, count),
            )
            write(f"{field}.offsets.int64", ends[field] + np.cumsum(lengths))
            ends[field] += count
        done(len(chunk))


def _chunks(examples: tuple) -> Iterator[tuple]:
    """Consecutive runs of records of about ``ENCODE_CHARS`` characters."""
    start, chars = 0, 0
    for i, example in enumerate(examples):
        chars += len(example[0]) + len(example[1])
        if chars >= ENCODE_CHARS:
            yield examples[start : i + 1]
            start, chars = i + 1, 0
    if start < len(examples):
        yield examples[start:]


def _label_ids(labels: tuple[str, ...], index: dict[str, int]) -> np.ndarray:
    """The class indices of ``labels`` as int32 (a TextDataset's labels are all in its class
    list)."""
    return np.fromiter((index[label] for label in labels), np.int32, len(labels))


def _clean_stale(folder: Path) -> None:
    """Delete the temporary record folders of writers that stopped (killed, or a full disk):
    those in which nothing was written for ``STALE_SECONDS``."""
    now = time.time()
    for tmp in folder.glob(".*.records.*"):
        try:
            if tmp.is_dir() and now - _last_written(tmp) > STALE_SECONDS:
                shutil.rmtree(tmp)
        except OSError:
            pass  # another process removed or renamed it


def _last_written(folder: Path) -> float:
    return max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.iterdir())])


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
