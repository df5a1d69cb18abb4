"""Training a char, word or BPE tokenizer on several cores, with bounded memory.

Most of a tokenizer's training is counting: the characters of the texts (char), their words
(word), their distinct pre-tokenized pieces (BPE, ``bpe_train.count_pieces``). ``train_on_cores``
gathers the texts into batches of at least ``BATCH_CHARS`` characters (half a million; a text
is never cut: a text file's texts are pieces of about a million characters (text_pieces.py),
a batch each) and counts each batch
(``tokenizer.count``); when there are at least ``PARALLEL_BATCHES`` batches and more than one
worker, worker processes count them (parallel.CountPool: each is sent the untrained tokenizer
once, then one batch at a time), and this process adds their counts up in the order of the
batches. A char tokenizer counts in this process: its counting (a set of characters, about
20 ms a million characters) costs less than sending the text to a worker. Then the vocabulary
is learned from the counts here (``tokenizer.train_counts``). The counts are those of counting
in one process, so the tokenizer is the one ``tokenizer.train(texts, **options)`` gives.
Memory holds the counts, and a batch a worker.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Any

from .base import Tokenizer
from .char import CharTokenizer
from .parallel import CountPool, shareable
from .texts import iter_texts

__all__ = ["BATCH_CHARS", "PARALLEL_BATCHES", "train_on_cores"]

BATCH_CHARS = 1 << 19  # a batch holds whole texts of at least this many characters in all
PARALLEL_BATCHES = 4  # texts of fewer batches are counted in this process alone


def train_on_cores(
    tokenizer: Tokenizer,
    texts: str | Iterable[str],
    options: dict[str, Any],
    *,
    workers: int = 1,
    done: Callable[[int], object] | None = None,
) -> Tokenizer:
    """``tokenizer.train(texts, **options)``, its counting done by at most ``workers``
    processes (the module docstring); ``done(n)`` is told the characters of each batch
    counted. A tokenizer that workers cannot rebuild (not char, word or BPE) trains as it
    would alone. The options are checked before anything is counted."""
    if not shareable(tokenizer):
        return tokenizer.train(texts, **options)
    tokenizer.train_counts(Counter(), **options)  # a ValueError for options that are wrong
    batches = _batches(iter_texts(texts))
    first = list(islice(batches, PARALLEL_BATCHES))
    if len(first) < PARALLEL_BATCHES or isinstance(tokenizer, CharTokenizer):
        workers = 1  # counted sooner than processes start, or than texts are sent
    batches = chain(first, batches)
    counts: Counter[str] = Counter()
    sizes: deque[int] = deque()  # the characters of the batches handed on, not yet added up

    def sized(stream: Iterator[list[str]]) -> Iterator[list[str]]:
        for batch in stream:
            sizes.append(sum(map(len, batch)))
            yield batch

    if workers > 1:
        with CountPool(tokenizer, workers) as pool:
            for found in pool.map(sized(batches)):
                _add(counts, found, sizes, done)
    else:
        for batch in sized(batches):
            _add(counts, tokenizer.count(batch), sizes, done)
    return tokenizer.train_counts(counts, **options)


def _add(
    counts: Counter[str],
    found: Counter[str],
    sizes: deque[int],
    done: Callable[[int], object] | None,
) -> None:
    counts.update(found)
    n = sizes.popleft()
    if done is not None:
        done(n)


def _batches(texts: Iterator[str]) -> Iterator[list[str]]:
    """The texts, in order, as lists of at least ``BATCH_CHARS`` characters (the last list:
    what is left)."""
    batch: list[str] = []
    chars = 0
    for text in texts:
        batch.append(text)
        chars += len(text)
        if chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch
