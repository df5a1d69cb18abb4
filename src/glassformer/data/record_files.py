"""The files of a record folder of the token cache (record_cache.py) and reading them back.

For each field of the task (``FIELDS``: ``text``; or ``source`` and ``target``)
``<field>.uint16`` (or ``.uint32``): every record's ids ``[<BOS>] ids <EOS>``, untruncated, one
record after another; ``<field>.offsets.int64``: where each record's ids start, then the total
(n + 1 numbers); for classification ``labels.int32``: each record's class index.
``read_folder`` maps them (numpy memory maps) and checks that they agree with each other and
with the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .examples import TextDataset

__all__ = ["FIELDS", "RecordTokens", "arrays", "files", "read_folder"]

CHECK_RECORDS = 1 << 16  # records whose offsets are checked at a time

FIELDS: dict[str, tuple[str, ...]] = {"seq2seq": ("source", "target"), "classification": ("text",)}


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


def files(task: str, dtype: np.dtype) -> dict[str, np.dtype]:
    """The files of a record folder and their types (the module docstring)."""
    kinds = {}
    for field in FIELDS[task]:
        kinds[f"{field}.{dtype.name}"] = dtype
        kinds[f"{field}.offsets.int64"] = np.dtype(np.int64)
    if task == "classification":
        kinds["labels.int32"] = np.dtype(np.int32)
    return kinds


def arrays(task: str, dtype: np.dtype, found: dict[str, np.ndarray]) -> RecordTokens:
    """The RecordTokens of the arrays of a folder's files (by file name)."""
    fields = {f: (found[f"{f}.{dtype.name}"], found[f"{f}.offsets.int64"]) for f in FIELDS[task]}
    return RecordTokens(fields, found.get("labels.int32"))


def read_folder(
    folder: Path, dataset: TextDataset, dtype: np.dtype, eos: int
) -> RecordTokens | None:
    """The memory maps of the record folder; None when it is missing or its files disagree
    with each other or with the ``dataset``'s count of records and classes (damaged)."""
    maps = {}
    for name, kind in files(dataset.task, dtype).items():
        try:
            size = (folder / name).stat().st_size
        except OSError:
            return None
        if size == 0 or size % kind.itemsize:
            return None
        maps[name] = np.memmap(folder / name, dtype=kind, mode="r")
    found = arrays(dataset.task, dtype, maps)
    n = len(dataset)
    for tokens, offsets in found.fields.values():
        if len(offsets) != n + 1 or offsets[0] != 0 or offsets[-1] != len(tokens):
            return None
        for start in range(0, n, CHECK_RECORDS):  # a run of records at a time: bounded memory
            ends = np.asarray(offsets[start : start + CHECK_RECORDS + 1])
            if np.any(ends[1:] <= ends[:-1]) or np.any(tokens[ends[1:] - 1] != eos):
                return None  # every record holds at least its <EOS>, and ends with it
    labels = found.labels
    if labels is not None and (
        len(labels) != n or labels.min() < 0 or labels.max() >= len(dataset.labels)
    ):
        return None
    return found
