"""Trained tokenizers kept in the token cache: a run whose char, word or BPE tokenizer is trained
on data seen before reads the tokenizer trained then instead of training it again.

* **Which data**: data with an identity known without reading them again: an lm split read
  from disk (``TextDataset.part``: ``Documents.identity()``, e.g. a text file's SHA-256, from
  its scan, and the part's characters), and the records of a seq2seq or classification split of
  at least ``record_cache.CACHE_CHARS`` characters (``records_digest``: the SHA-256 of the
  records). Smaller data, such as the built-in corpora and tasks held in memory, trains in
  about a second or less and is not kept.
* **Where**: ``<cache folder>/tokenizers/<key>.json`` (token_cache.py's folder: ``data.cache``,
  else ``$GLASSFORMER_CACHE``, else ``~/.cache/glassformer/tokens``), the tokenizer's JSON
  (``Tokenizer.save``).
* **Key**: the SHA-256 of ``FORMAT`` (bumped when training would give another tokenizer), the
  data's identity, the tokenizer's kind, its JSON untrained (its pattern) and the training
  options (``vocab_size`` ...): a changed file, another part of it or other options train anew.
* **Safe**: the documents of a split on disk are checked as they are read for training (a file
  changed since its scan is refused, as the token cache refuses it); the JSON is written aside
  and renamed (safe_write.py), so a run killed while writing leaves nothing half-written; a
  file that does not load (damaged, or of another kind) is trained again and replaced.
  Processes that train the same tokenizer at once (the ranks of a torchrun) take turns on
  ``<key>.lock`` (cache_lock.py): one trains, the others wait and read its file. A cache folder
  that cannot be written only means the next run trains again.
* **A sample for BPE**: a BPE tokenizer's merges are learned from at most ``sample``
  characters of the split (``TextDataset.tokenizer_sample``, default ``SAMPLE_CHARS``: a
  hundred million; 0: all of it): texts (a text file's pieces of about a million characters)
  spread evenly through the split, text i taken when ``ceil((i + 1) f) > ceil(i f)`` with
  ``f = sample / characters`` (the first text always). Byte-level BPE encodes every byte, so a
  sample leaves no character out; it changes only which merges the rarer pairs get. A char or
  word tokenizer counts everything: a character or a word missing from a sample would become
  unknown.
* **Cores**: training counts the texts on several cores (tokenizers/train_parallel.py), at most
  the split's ``workers`` (else ``$GLASSFORMER_WORKERS``) processes, as encoding does.
* **Shown**: for data of at least ``token_cache.SHOWN_CHARS`` characters, a hit is one line
  (``tokenizer: bpe 512 read from the cache <path>``) and training shows the characters counted
  as encoding does (progress.Work: a bar, or a line at each tenth).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..progress import Work, say
from ..tokenizers import Tokenizer, get_tokenizer
from ..tokenizers.train_parallel import train_on_cores
from .cache_lock import exclusive
from .examples import TextDataset
from .record_cache import CACHE_CHARS, FIELDS, records_digest
from .record_digest import record_chars
from .text_pieces import pieces
from .token_cache import SHOWN_CHARS, cache_folder, encode_workers

__all__ = ["FORMAT", "SAMPLE_CHARS", "sampled", "trained_tokenizer"]

FORMAT = 1  # bumped when the key changes, or training gives another tokenizer for the same data
SAMPLE_CHARS = 100_000_000  # the most characters a BPE tokenizer learns its merges from


def trained_tokenizer(
    dataset: TextDataset,
    kind: str,
    options: dict[str, Any],
    *,
    progress: str = "none",
    workers: int | None = None,
) -> Tokenizer:
    """A ``kind`` tokenizer ("char", "word", "bpe") trained with ``options`` on
    ``dataset.texts()``: read from the cache when it holds one trained on the same data with the
    same options, else trained (on at most ``workers`` processes; None:
    ``dataset.workers``, else ``$GLASSFORMER_WORKERS``, else every usable CPU) and kept there
    (the module docstring). A BPE tokenizer learns from a sample of at most
    ``dataset.tokenizer_sample`` characters (None: ``SAMPLE_CHARS``; 0: every character).
    ``progress`` ("bar", "lines", "none") shows the training or the hit."""
    tokenizer = get_tokenizer(kind)
    chars = _chars(dataset)
    identity = _identity(dataset, chars)
    sample = _sample(dataset, kind, chars)
    if identity is not None and sample is not None:
        identity["sample"] = sample
    if chars < SHOWN_CHARS:
        progress = "none"

    def train() -> Tokenizer:
        what = f"training the {kind} tokenizer on {_name(dataset)}"
        if sample is not None:
            what += f" (a sample of {sample:,} of its {chars:,} characters)"
        shown = Work(progress, chars, what, "character")  # counted or passed over
        try:
            texts = _texts(dataset)
            if sample is not None:
                texts = sampled(texts, Fraction(sample, chars), passed=shown.update)
            most = encode_workers(workers if workers is not None else dataset.workers)
            return train_on_cores(tokenizer, texts, options, workers=most, done=shown.update)
        finally:
            shown.close()

    if identity is None:
        return train()
    folder = cache_folder(dataset.part.cache if dataset.part is not None else dataset.cache)
    folder /= "tokenizers"
    key = _key(identity, tokenizer, options)
    path, lock = folder / f"{key}.json", folder / f"{key}.lock"

    def waiting() -> None:
        if progress != "none":
            say(f"waiting for another process training the {kind} tokenizer (lock file {lock})")

    found = _read(path, kind)
    if found is None:
        with contextlib.ExitStack() as held:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                held.enter_context(exclusive(lock, waiting))
            except OSError:  # a folder that cannot be written: trained for this run
                return train()
            found = _read(path, kind)  # another process's
            if found is None:
                trained = train()
                with contextlib.suppress(OSError):  # a full disk: the next run trains again
                    trained.save(path)
                return trained
    if progress != "none":
        say(f"tokenizer: {kind} {found.vocab_size} read from the cache {path}")
    return found


def _identity(dataset: TextDataset, chars: int) -> dict[str, Any] | None:
    """What the texts of ``dataset`` (``chars`` characters) depend on, as JSON; None for data
    not kept (the module docstring)."""
    if dataset.part is not None:
        return {"documents": dataset.part.identity()}
    if dataset.task in FIELDS and len(dataset) and chars >= CACHE_CHARS:
        return {"task": dataset.task, "records": records_digest(dataset)}
    return None


def sampled(
    texts: Iterable[str], fraction: Fraction, passed: Callable[[int], object] | None = None
) -> Iterator[str]:
    """The texts i with ``ceil((i + 1) f) > ceil(i f)`` (f = ``fraction``): about a fraction f
    of them, spread evenly, the first always among them; ``passed(n)`` is told the characters
    of each text left out."""
    p, q = fraction.numerator, fraction.denominator
    for i, text in enumerate(texts):
        if -(-(i + 1) * p // q) > -(-i * p // q):  # ceil((i + 1) f) > ceil(i f), in integers
            yield text
        elif passed is not None:
            passed(len(text))


def _sample(dataset: TextDataset, kind: str, chars: int) -> int | None:
    """The characters a ``kind`` tokenizer samples from the ``chars`` of ``dataset``; None
    when it trains on all of them (the module docstring)."""
    sample = dataset.tokenizer_sample
    sample = SAMPLE_CHARS if sample is None else sample
    return sample if kind == "bpe" and 0 < sample < chars else None


def _texts(dataset: TextDataset) -> Iterator[str]:
    """``dataset.texts()``; the documents of a split on disk checked against their identity
    as they are read (a file changed meanwhile is a ``ValueError``: nothing is kept)."""
    if dataset.part is None:
        return dataset.texts()
    return (piece for document in dataset.part.documents() for piece in pieces(document))


def _chars(dataset: TextDataset) -> int:
    """The characters of the texts a tokenizer trains on."""
    if dataset.part is not None:
        return dataset.part.chars
    return record_chars(dataset)  # records on disk: counted by their scan


def _name(dataset: TextDataset) -> str:
    return dataset.part.name if dataset.part is not None else Path(dataset.name).name


def _key(identity: dict[str, Any], tokenizer: Tokenizer, options: dict[str, Any]) -> str:
    key = {
        "format": FORMAT,
        "data": identity,
        "kind": tokenizer.kind,
        "untrained": tokenizer.to_dict(),
        "options": options,
    }
    text = json.dumps(key, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def _read(path: Path, kind: str) -> Tokenizer | None:
    """The tokenizer kept at ``path``; None when there is none, or it does not load or is not
    of ``kind`` (damaged: trained again)."""
    try:
        tokenizer = Tokenizer.load(path)
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    return tokenizer if tokenizer.kind == kind else None
