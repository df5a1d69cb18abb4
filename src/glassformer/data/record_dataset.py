"""Token datasets of seq2seq or classification records read from the token cache
(record_cache.py): the items of ``Seq2SeqDataset`` and ``ClassificationDataset`` (encoding.py),
made from memory maps when they are read.

:class:`RecordDataset` applies ``max_len`` and ``overflow`` to the untruncated ids of the cache
when it is made, from the records' lengths (numpy, no loop over records): ``"error"`` names the
first record too long, ``"drop"`` keeps the indices of the others, ``"truncate"`` counts the
records it will cut; the messages and counts (``num_truncated``, ``num_dropped``) are those of
encoding.py. Item i, when read, is ``{"input_ids": (L,) long, "labels": (L',) long}`` for a
pair (source ids + <EOS>, target ids + <EOS>), ``{"input_ids": (L,) long, "labels": () long}``
for a labelled text ([<BOS>] ids <EOS>, class index); a side longer than ``max_len`` keeps its
first ``max_len - 1`` ids and its closing <EOS>.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import Dataset

from .encoding import (
    Where,
    _check_kept,
    _check_max_len,
    _check_overflow,
    _index,
    _overflow_error,
)
from .examples import TextDataset
from .record_cache import RecordTokens, record_tokens

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

__all__ = ["RecordDataset", "record_dataset"]


def record_dataset(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    max_len: int,
    *,
    add_bos: bool = True,
    overflow: str = "error",
    progress: str = "none",
    workers: int | None = None,
) -> RecordDataset:
    """The token dataset of the seq2seq or classification records of ``dataset``, encoded once
    into the token cache (record_cache.py, by at most ``workers`` processes) and read from
    there; the same items as ``Seq2SeqDataset`` / ``ClassificationDataset`` with these
    arguments."""
    _check_max_len(max_len, 2 if add_bos or dataset.task == "seq2seq" else 1)
    _check_overflow(overflow)
    tokens = record_tokens(dataset, tokenizer, add_bos=add_bos, progress=progress, workers=workers)
    return RecordDataset(
        tokens, max_len, tokenizer.eos_id, overflow=overflow, where=dataset.where,
        labels=dataset.labels,
    )  # fmt: skip


class RecordDataset(Dataset):
    """Items of ``tokens`` cut to ``max_len`` as ``overflow`` says (the module docstring);
    ``where(i)`` names record i in messages; ``labels``: the class names (classification)."""

    def __init__(
        self,
        tokens: RecordTokens,
        max_len: int,
        eos_id: int,
        *,
        overflow: str = "error",
        where: Where | None = None,
        labels: tuple[str, ...] = (),
    ) -> None:
        where = where or _index
        self.tokens, self.max_len, self.eos_id = tokens, max_len, eos_id
        self.labels = tuple(labels)
        self.num_dropped = self.num_truncated = 0
        self.rows: np.ndarray | None = None  # (kept,) record indices when some were dropped
        n = len(tokens)
        names = list(tokens.fields)
        lengths = np.stack([np.diff(offsets) for _, offsets in tokens.fields.values()])  # (F, n)
        too_long = (lengths > max_len).any(axis=0)  # (n,)
        if too_long.any():
            if overflow == "error":
                i = int(np.argmax(too_long))
                what = names[int(np.argmax(lengths[:, i] > max_len))]
                longest = int(lengths[:, i].max())
                raise _overflow_error(where(i), what, longest, max_len)
            if overflow == "drop":
                self.rows = np.flatnonzero(~too_long)
                self.num_dropped = n - len(self.rows)
            else:
                self.num_truncated = int(too_long.sum())
        _check_kept(range(len(self)), range(n), max_len, where)

    def __len__(self) -> int:
        return len(self.tokens) if self.rows is None else len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"record {i} of {n}")
        row = i % n if self.rows is None else int(self.rows[i])
        ids = [self._ids(tokens, offsets, row) for tokens, offsets in self.tokens.fields.values()]
        if self.tokens.labels is None:
            return {"input_ids": ids[0], "labels": ids[1]}
        return {"input_ids": ids[0], "labels": torch.tensor(int(self.tokens.labels[row]))}

    def _ids(self, tokens: np.ndarray, offsets: np.ndarray, row: int) -> torch.Tensor:
        """Record ``row``'s ids, its first ``max_len - 1`` and <EOS> when it is longer."""
        start, end = int(offsets[row]), int(offsets[row + 1])
        if end - start <= self.max_len:
            return torch.from_numpy(np.array(tokens[start:end], dtype=np.int64))
        ids = np.empty(self.max_len, dtype=np.int64)  # (max_len,)
        ids[:-1] = tokens[start : start + self.max_len - 1]
        ids[-1] = self.eos_id
        return torch.from_numpy(ids)
