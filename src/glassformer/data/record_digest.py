"""What identifies the records of a seq2seq or classification split for the record cache
(record_cache.py): the characters of its texts, and the SHA-256 of its records.

``records_digest`` hashes the records a run of ``HASH_RECORDS`` at a time: the lengths of
their fields (characters, int64), then their text as UTF-8, so that the same records give the
same digest however they were read (a file, a built-in task, a list). Records on disk
(record_stream.py) were counted and hashed when their file was scanned: nothing is read.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .examples import TextDataset
from .on_disk import OnDisk
from .record_files import FIELDS

__all__ = ["HASH_RECORDS", "RecordHasher", "on_disk", "record_chars", "records_digest"]

HASH_RECORDS = 8192  # records hashed at a time


def record_chars(dataset: TextDataset) -> int:
    """Characters to encode in the split: its texts (both sides of a pair); those of records on
    disk counted when the file was scanned."""
    part = on_disk(dataset)
    return part.chars if part is not None else sum(map(len, dataset.texts()))


def on_disk(dataset: TextDataset):
    """The records on disk of ``dataset`` (record_stream.RecordPart), else None."""
    if dataset.task in FIELDS and isinstance(dataset.examples, OnDisk):
        return dataset.examples.source
    return None


def records_digest(dataset: TextDataset) -> str:
    """The SHA-256 of the records of ``dataset`` (the module docstring's key; ``RecordHasher``);
    that of records on disk as their scan found it (no record is read)."""
    part = on_disk(dataset)
    if part is not None:
        return part.digest
    records = RecordHasher()
    for example in dataset.examples:
        records.add(example)
    return records.hexdigest()


class RecordHasher:
    """The SHA-256 of records given one at a time: for each run of ``HASH_RECORDS`` records,
    the lengths of their fields (characters, int64), then their text as UTF-8."""

    def __init__(self) -> None:
        self.sha256, self.every = hashlib.sha256(), HASH_RECORDS
        self.texts: list[str] = []  # the fields of the records not hashed yet
        self.held = 0  # records not hashed yet

    def add(self, example: tuple[str, ...]) -> None:
        self.texts.extend(example)
        self.held += 1
        if self.held == self.every:
            self._hash()

    def _hash(self) -> None:
        if self.held:
            texts = self.texts
            self.sha256.update(np.fromiter(map(len, texts), "<i8", len(texts)).tobytes())
            self.sha256.update("".join(texts).encode("utf-8", "surrogatepass"))
            self.texts, self.held = [], 0

    def hexdigest(self) -> str:
        self._hash()
        return self.sha256.hexdigest()
