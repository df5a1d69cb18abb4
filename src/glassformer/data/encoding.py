"""Token datasets: text -> ids, wrapped in <BOS>/<EOS> and cut to ``max_len`` ("Formal
Algorithms for Transformers", "Tokenization": a text is a sequence of ids preceded by <BOS> and
followed by <EOS>; a text longer than l_max is broken into chunks, a shorter one is padded —
padding is done per batch by ``collate``).

Each class is a ``torch.utils.data.Dataset`` whose items are dicts of 1-D ``torch.long``
tensors, padded into batches by the collate functions of ``collate.py``:

* :class:`LMDataset` (causal and masked LM) — ``{"input_ids"}``. Each document becomes
  ``<BOS> ids <EOS>`` (``<BOS>`` only if ``add_bos``); the documents are concatenated, in order,
  into one stream. With ``pack=True`` the stream is cut into consecutive windows of
  ``max_len`` tokens (a window may start mid-document and hold the end of one document and
  the start of the next; the last window may be shorter). With ``pack=False`` each
  document is cut separately (a window never crosses a document boundary; the last window of
  every document may be shorter). Either way the windows, concatenated, are exactly the
  stream. Windows do not overlap, so the next-token target of a window's last token is not
  scored (the model shifts the labels inside a window).
* :class:`PackedWindows` — the same windows as ``LMDataset(pack=True)`` over one stream of ids
  held elsewhere, e.g. a memory map of a token file (token_cache.py); a window is made when it
  is read, so memory does not grow with the stream.
* :class:`Seq2SeqDataset` — ``{"input_ids": source ids + <EOS>, "labels": target ids +
  <EOS>}``; the decoder input ``<BOS> + target ids`` is made by ``collate`` from the labels.
* :class:`ClassificationDataset` — ``{"input_ids": <BOS> ids <EOS>, "labels": class index}``
  (a 0-d tensor). Position 0 holds <BOS>, the CLS position a model may pool from;
  ``add_bos=False`` leaves it out.

A seq2seq or classification example longer than ``max_len`` (its <BOS>/<EOS> counted) is
handled by ``overflow``: ``"error"`` (the default: ValueError naming the example — its file and
line when ``where`` says them — and how to choose another policy), ``"truncate"`` (keep the
first tokens, then the closing <EOS>, as Hugging Face tokenizers do with ``truncation=True``;
``num_truncated`` counts the examples cut) or ``"drop"`` (skip it; ``num_dropped`` counts).
In a seq2seq pair each side longer than ``max_len`` is truncated on its own.

``encode_dataset`` (loader.py) gives a split of many records ``record_dataset.RecordDataset``
instead of the last two: the same items, made from the token cache's memory maps.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import Dataset

from ..named import naming
from .examples import OVERFLOW

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

Where = Callable[[int], str]  # example index -> "file 'x.tsv', line 5" (for messages)


class LMDataset(Dataset):
    """Windows of at most ``max_len`` tokens of the concatenated documents (module docstring)."""

    def __init__(
        self,
        texts: Iterable[str],
        tokenizer: Tokenizer,
        max_len: int,
        *,
        pack: bool = True,
        add_bos: bool = True,
    ) -> None:
        _check_max_len(max_len, 2)
        stream: list[int] = []
        doc_starts: list[int] = []
        for text in _texts(texts):
            doc_starts.append(len(stream))
            stream.extend(tokenizer.encode(text, add_bos=add_bos, add_eos=True))
        if not stream:
            raise ValueError("texts is empty: allowed at least one document")
        # (N,) every token, in order (through NumPy: torch.tensor of a long list of Python ints
        # takes 4x as long, 0.9 s for the 4.3 million of the built-in Shakespeare)
        self.stream = torch.from_numpy(np.array(stream, dtype=np.int64))
        bounds = [0, len(stream)] if pack else [*doc_starts, len(stream)]
        starts: list[int] = []
        for lo, hi in itertools.pairwise(bounds):
            starts.extend(range(lo, hi, max_len))
        ends = [*starts[1:], len(stream)]  # with pack=False a document's end starts a window
        self.starts = torch.tensor(starts, dtype=torch.long)
        self.ends = torch.tensor(ends, dtype=torch.long)
        self.max_len = max_len

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.stream[self.starts[i] : self.ends[i]]}


class PackedWindows(Dataset):
    """Consecutive windows of ``max_len`` ids of ``stream`` (the last may be shorter): the
    windows of ``LMDataset(pack=True)`` when ``stream`` is its stream."""

    def __init__(self, stream: np.ndarray, max_len: int) -> None:
        _check_max_len(max_len, 2)
        if len(stream) == 0:
            raise ValueError("stream is empty: allowed at least one token")
        self.stream, self.max_len = stream, max_len  # (N,) ids, any integer dtype

    def __len__(self) -> int:
        return -(-len(self.stream) // self.max_len)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"window {i} of {len(self)}")
        start = (i % len(self)) * self.max_len
        window = np.array(self.stream[start : start + self.max_len], dtype=np.int64)  # (<= l,)
        return {"input_ids": torch.from_numpy(window)}


class Seq2SeqDataset(Dataset):
    """(source, target) pairs -> source ids + <EOS>, labels = target ids + <EOS>."""

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        tokenizer: Tokenizer,
        max_len: int,
        *,
        overflow: str = "error",
        where: Where | None = None,
    ) -> None:
        _check_max_len(max_len, 2)
        _check_overflow(overflow)
        where = where or _index
        eos = tokenizer.eos_id
        self.items: list[dict[str, torch.Tensor]] = []
        self.num_dropped = self.num_truncated = 0
        for i, (source, target) in enumerate(pairs):
            src = tokenizer.encode(source, add_eos=True)
            tgt = tokenizer.encode(target, add_eos=True)
            if len(src) > max_len or len(tgt) > max_len:
                what = "source" if len(src) > max_len else "target"
                n = max(len(src), len(tgt))
                if overflow == "error":
                    raise _overflow_error(where(i), what, n, max_len)
                if overflow == "drop":
                    self.num_dropped += 1
                    continue
                self.num_truncated += 1
                src = [*src[: max_len - 1], eos] if len(src) > max_len else src
                tgt = [*tgt[: max_len - 1], eos] if len(tgt) > max_len else tgt
            self.items.append({"input_ids": torch.tensor(src), "labels": torch.tensor(tgt)})
        _check_kept(self.items, pairs, max_len, where)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.items[i]


class ClassificationDataset(Dataset):
    """(label, text) pairs -> <BOS> ids <EOS> and the label's index in ``labels``."""

    def __init__(
        self,
        examples: Sequence[tuple[str, str]],
        labels: Sequence[str],
        tokenizer: Tokenizer,
        max_len: int,
        *,
        add_bos: bool = True,
        overflow: str = "error",
        where: Where | None = None,
    ) -> None:
        _check_max_len(max_len, 2 if add_bos else 1)
        _check_overflow(overflow)
        where = where or _index
        index = {label: k for k, label in enumerate(labels)}
        self.labels = tuple(labels)
        self.items: list[dict[str, torch.Tensor]] = []
        self.num_dropped = self.num_truncated = 0
        for i, (label, text) in enumerate(examples):
            if label not in index:
                raise ValueError(f"{where(i)} has label {label!r}: allowed {self.labels}")
            ids = tokenizer.encode(text, add_bos=add_bos, add_eos=True)
            if len(ids) > max_len:
                if overflow == "error":
                    raise _overflow_error(where(i), "text", len(ids), max_len)
                if overflow == "drop":
                    self.num_dropped += 1
                    continue
                self.num_truncated += 1
                ids = [*ids[: max_len - 1], tokenizer.eos_id]
            self.items.append(
                {"input_ids": torch.tensor(ids), "labels": torch.tensor(index[label])}
            )
        _check_kept(self.items, examples, max_len, where)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.items[i]


def _texts(texts: Iterable[str]) -> Iterable[str]:
    if isinstance(texts, str):
        raise ValueError("texts is a str: allowed an iterable of documents, e.g. [text]")
    return texts


def _check_max_len(max_len: int, low: int) -> None:
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < low:
        raise ValueError(f"max_len is {max_len!r}: allowed an int >= {low}")


def _check_overflow(overflow: str) -> None:
    if overflow not in OVERFLOW:
        raise ValueError(f"overflow is {overflow!r}: allowed {', '.join(map(repr, OVERFLOW))}")


def _index(i: int) -> str:
    return f"examples[{i}]"


OVERFLOW_NAMES = ("data.overflow", "model.max_len")  # the run's settings the messages name


def _overflow_error(where: str, what: str, n: int, max_len: int) -> ValueError:
    """The error of an example longer than max_len under overflow='error'."""
    message = (
        f"{where}: the {what} has {n} tokens counting <BOS>/<EOS>, more than "
        f"max_len={max_len}: allowed a larger max_len, or overflow='truncate' or 'drop' "
        "(load_dataset(..., overflow='truncate'), make_loader(..., overflow='truncate'), "
        "in a run data.overflow=truncate)"
    )
    return naming(ValueError(message), names=OVERFLOW_NAMES)


def _check_kept(items: list, examples: Sequence, max_len: int, where: Where) -> None:
    """overflow='drop' must leave something to train on."""
    if examples and not items:
        message = (
            f"all {len(examples)} examples (the first: {where(0)}) are longer than "
            f"max_len={max_len}, and overflow='drop' dropped them all: allowed a larger "
            "max_len or overflow='truncate' (in a run model.max_len=N or data.overflow=truncate)"
        )
        raise naming(ValueError(message), names=OVERFLOW_NAMES)
