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
  file, a built-in task, a list; for the records of a file, hashed once as the file is scanned
  and kept with its scan, record_stream.py), the task, the class list (classification: the class
  indices depend on it), whether a <BOS> opens each text, and the SHA-256 of the tokenizer's
  JSON (``Tokenizer.to_dict``).
* **Layout** (record_files.py): for each field (``text``; or ``source`` and ``target``)
  ``<field>.uint16`` (or ``.uint32``): every record's ids ``[<BOS>] ids <EOS>``, untruncated,
  one record after another; ``<field>.offsets.int64``: where each record's ids start, then the
  total (n + 1 numbers); for classification ``labels.int32``: each record's class index.
  ``max_len`` and ``overflow`` are applied when a dataset is made of them (record_dataset.py),
  so a run with another ``max_len`` reads the same files.
* **Safe**: the folder is filled aside and renamed into place when complete
  (``safe_write.replace_dir``), so a run killed while encoding, or a full disk, leaves nothing
  a later run would read; temporary folders untouched for ``STALE_SECONDS`` are deleted. A
  folder whose files disagree (sizes, offsets, a record not closed by <EOS>, a class index out
  of range) is encoded again. A cache folder that cannot be written is noted, and the arrays
  are kept in memory for the run.
* **Bounded memory**: records are encoded about ``ENCODE_CHARS`` characters at a time with
  ``tokenizer.encode_batch`` and appended to the files; the records of a file are read from it
  as they are encoded (record_stream.py), hashed again and checked against the key's hash, so
  a file that changed meanwhile is refused and nothing is kept.
* **Cores**: a split of at least ``PARALLEL_CHARS`` characters is encoded by at most
  ``workers`` processes (``record_tokens``'s argument, else ``$GLASSFORMER_WORKERS``, else
  every CPU the process may use; token_cache.encode_workers): with a char, word or BPE
  tokenizer, each field of a chunk goes to a worker process (tokenizers/parallel.py:
  ``Records``), which answers its ids and each record's count of ids, in order; a
  tokenizer.json's ``encode_batch`` encodes a chunk on the cores itself. The files are those
  of encoding in one process.
* **One process encodes**: processes that want the same folder (the ranks of a torchrun, two
  runs started together) take turns on an exclusive lock, ``<key>.lock`` in the cache folder
  (cache_lock.py): the first encodes; the others say that they wait (one line, when progress
  is shown) and then read its folder. The writer deletes the lock file when it is done; one
  left by a writer that was killed is deleted with the stale temporary folders.
* **When**: only splits of at least ``CACHE_CHARS`` characters (``uses_record_cache``). A
  smaller one (the built-in synthetic tasks: 10,000 examples of about ten characters; a file of
  a few thousand messages) is encoded in memory in well under a second and some megabytes,
  less than hashing it and writing files would cost, and leaves no files behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import Work, say
from ..safe_write import replace_dir
from ..tokenizers.parallel import EncodePool, Records, encode_records, shareable
from .cache_lock import exclusive, remove_stale
from .examples import TextDataset
from .record_digest import on_disk, record_chars, records_digest
from .record_files import FIELDS, RecordTokens, arrays, read_folder
from .token_cache import (
    SHOWN_CHARS,
    STALE_SECONDS,
    CacheNote,
    cache_folder,
    encode_workers,
    token_dtype,
)

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
PARALLEL_CHARS = 4 << 20  # smaller splits are encoded in this process (sooner than workers start)

Write = Callable[[str, np.ndarray], object]  # (file name, array to append)


def uses_record_cache(dataset: TextDataset) -> bool:
    """Whether the records of ``dataset`` are encoded into the cache (the module docstring)."""
    return dataset.task in FIELDS and len(dataset) > 0 and record_chars(dataset) >= CACHE_CHARS


def record_tokens(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    *,
    add_bos: bool = True,
    progress: str = "none",
    workers: int | None = None,
) -> RecordTokens:
    """The ids of the records of ``dataset`` (seq2seq or classification) from their folder in
    the token cache, encoded and written first when the cache lacks it (the module docstring),
    by at most ``workers`` processes (None: ``$GLASSFORMER_WORKERS``, else every CPU this
    process may use; 1: this process alone). ``add_bos``: classification only (a seq2seq
    source or target never has one). ``progress`` ("bar", "lines", "none") shows the
    encoding, or says in one line that the records come from the cache (or that another
    process is encoding them), for splits of at least ``SHOWN_CHARS`` characters."""
    workers = encode_workers(workers)
    add_bos = add_bos and dataset.task == "classification"
    dtype = token_dtype(tokenizer.vocab_size)
    folder = cache_folder(dataset.cache)
    key = _key(dataset, tokenizer, add_bos)
    target, lock = folder / f"{key}.records", folder / f"{key}.lock"
    chars = record_chars(dataset)
    if chars < SHOWN_CHARS:
        progress = "none"
    name = f"{Path(dataset.name).name} ({dataset.split})"

    def encode(write: Write) -> None:
        shown = Work(progress, len(dataset), f"encoding {name}", "record")
        try:
            _encode(dataset, tokenizer, dtype, add_bos, write, shown.update, workers)
        finally:
            shown.close()

    def waiting() -> None:
        if progress != "none":
            say(f"waiting for another process encoding {name} (lock file {lock})")

    found = read_folder(target, dataset, dtype, tokenizer.eos_id)
    try:
        if found is None:
            folder.mkdir(parents=True, exist_ok=True)
            with exclusive(lock, waiting):
                found = read_folder(target, dataset, dtype, tokenizer.eos_id)  # another process's
                if found is None:
                    _clean_stale(folder)
                    return _write_folder(target, dataset, dtype, tokenizer.eos_id, encode)
    except OSError as err:
        found = read_folder(target, dataset, dtype, tokenizer.eos_id)
        if found is not None:  # another process wrote the same folder meanwhile (no lock)
            return found
        message = (
            f"the token cache {folder} cannot be written ({err.strerror or err}); the tokens "
            f"of {name} are kept in memory for this run"
        )
        warnings.warn(message, CacheNote, stacklevel=2)
        kept: dict[str, list[np.ndarray]] = {}
        encode(lambda file, ids: kept.setdefault(file, []).append(ids))
        return arrays(dataset.task, dtype, {f: np.concatenate(a) for f, a in kept.items()})
    if progress != "none":
        say(
            f"{name}: {len(found):,} records, {found.num_tokens:,} tokens read from the "
            f"token cache {target}"
        )
    return found


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


def _write_folder(
    target: Path,
    dataset: TextDataset,
    dtype: np.dtype,
    eos: int,
    encode: Callable[[Write], None],
) -> RecordTokens:
    """Fill a temporary folder with the record files and rename it to ``target``; the memory
    maps of its files."""
    written: list[RecordTokens] = []

    def fill(tmp: Path) -> None:
        _write_files(tmp, encode)
        # mapped before the rename: the maps keep these files even if the folder is
        # replaced later
        found = read_folder(tmp, dataset, dtype, eos)
        if found is None:
            raise RuntimeError(f"the record files written in {tmp} do not read back")
        written.append(found)

    replace_dir(target, fill)
    return written[0]


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
    workers: int = 1,
) -> None:
    """Encode the records a chunk at a time, each field of a chunk a batch (``Records``),
    handing each file's new part to ``write`` and the chunk's count of records to ``done``:
    on ``workers`` processes (a char, word or BPE tokenizer, a split of at least
    ``PARALLEL_CHARS`` characters), else in this process (``encode_batch``; a
    tokenizer.json's uses the cores itself)."""
    fields = FIELDS[dataset.task]
    classify = dataset.task == "classification"
    ends = dict.fromkeys(fields, 0)
    for field in fields:
        write(f"{field}.offsets.int64", np.zeros(1, np.int64))
    index = {label: k for k, label in enumerate(dataset.labels)}
    chunks: deque[tuple] = deque()  # the chunks handed on, not yet written

    part = on_disk(dataset)  # records on disk: read as they are encoded, checked
    examples = (ex for _, ex in part.records(check=True)) if part is not None else dataset.examples

    def batches() -> Iterator[Records]:
        for chunk in _chunks(examples):
            chunks.append(chunk)
            columns = list(zip(*chunk, strict=True))
            for texts in columns[1:] if classify else columns:
                yield Records(texts, add_bos)

    pooled = workers > 1 and shareable(tokenizer) and record_chars(dataset) >= PARALLEL_CHARS
    with EncodePool(tokenizer, workers, dtype) if pooled else contextlib.nullcontext() as pool:
        answers = (
            pool.map(batches())
            if pool is not None
            else (encode_records(tokenizer, batch, dtype) for batch in batches())
        )
        for k, (ids, lengths) in enumerate(answers):
            field = fields[k % len(fields)]
            if field == fields[0]:
                chunk = chunks.popleft()
                if classify:
                    write("labels.int32", _label_ids([label for label, _ in chunk], index))
            write(f"{field}.{dtype.name}", ids)
            write(f"{field}.offsets.int64", ends[field] + np.cumsum(lengths))
            ends[field] += len(ids)
            if field == fields[-1]:
                done(len(chunk))


def _chunks(examples: Iterable[tuple[str, str]]) -> Iterator[tuple]:
    """Consecutive runs of records of about ``ENCODE_CHARS`` characters."""
    chunk, chars = [], 0
    for example in examples:
        chunk.append(example)
        chars += len(example[0]) + len(example[1])
        if chars >= ENCODE_CHARS:
            yield tuple(chunk)
            chunk, chars = [], 0
    if chunk:
        yield tuple(chunk)


def _label_ids(labels: list[str], index: dict[str, int]) -> np.ndarray:
    """The class indices of ``labels`` as int32 (a TextDataset's labels are all in its class
    list)."""
    return np.fromiter((index[label] for label in labels), np.int32, len(labels))


def _clean_stale(folder: Path) -> None:
    """Delete the temporary record folders of writers that stopped (killed, or a full disk):
    those in which nothing was written for ``STALE_SECONDS``; and the lock files of writers
    that were killed (cache_lock.remove_stale)."""
    now = time.time()
    for lock in folder.glob("*.lock"):
        remove_stale(lock, STALE_SECONDS)
    for tmp in folder.glob(".*.records.*"):
        try:
            if tmp.is_dir() and now - _last_written(tmp) > STALE_SECONDS:
                shutil.rmtree(tmp)
        except OSError:
            pass  # another process removed or renamed it


def _last_written(folder: Path) -> float:
    return max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.iterdir())])
