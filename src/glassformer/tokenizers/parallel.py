"""Encoding and counting on several cores: a stream of batches handled by worker processes, in
order, with bounded memory.

A batch to encode is a list of parts: a ``str`` is text to encode (``Tokenizer.encode``,
nothing special), an ``int`` is an id written as it is (a <BOS> or <EOS> between documents);
``encode_parts`` turns it into one array of ids. Or it is ``Records``: texts each encoded whole as
``[<BOS>] ids <EOS>`` (the records of a seq2seq or classification split, record_cache.py);
``encode_records`` turns it into their ids, one record after another, and each record's count of
ids. ``EncodePool`` hands the batches to ``workers`` processes and gives their answers back in
the order of the batches; a worker holds one batch at a time, so memory stays bounded whatever
the length of the stream. ``CountPool`` does the same for a tokenizer's training: a batch is a
list of texts, answered with their counts (``tokenizer.count``: the characters, words or
pre-tokenized pieces of the texts), which the caller adds up (train_parallel.py).

* **Which tokenizers**: glassformer's char, word and BPE tokenizers (``shareable``), sent to
  each worker once as their JSON (``to_dict``) and rebuilt there. A Hugging Face tokenizer is
  not: its library encodes a batch of texts on all cores itself (``HFTokenizer.encode_batch``).
* **Processes**: new Python processes (``encode_worker``, talking pickles over pipes), never a
  fork, which is unsafe in a process that runs threads (PyTorch's, a tokenizers library's);
  nor ``multiprocessing``'s spawn or fork server, which import the caller's main module again
  in each worker (a script without ``if __name__ == "__main__"``, or ``python -m glassformer``,
  would run again there). A worker imports only the tokenizers: it starts in about 0.3 s.
* **Errors**: an error in a worker (a ``ValueError`` for text the tokenizer cannot encode) is
  raised in the caller, and a worker that dies is a ``RuntimeError``; leaving the ``with``
  block by an error or a ``KeyboardInterrupt`` (which the workers ignore) kills the workers;
  after the end of their input they leave; either way they are waited for.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import Tokenizer
from .bpe import BPETokenizer
from .char import CharTokenizer
from .word import WordTokenizer

__all__ = [
    "CountPool", "EncodePool", "Records", "encode", "encode_parts", "encode_records",
    "shareable", "usable_cpus", "worker_count",
]  # fmt: skip

SHAREABLE = (CharTokenizer, WordTokenizer, BPETokenizer)

Part = str | int  # text to encode, or an id written as it is


@dataclass(frozen=True)
class Records:
    """A batch of texts each encoded whole, ``[<BOS>] ids <EOS>`` (<BOS> when ``add_bos``)."""

    texts: tuple[str, ...]
    add_bos: bool = False


Batch = Sequence[Part] | Records
Answer = np.ndarray | tuple[np.ndarray, np.ndarray]  # encode_parts's, or encode_records's


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, as ``taskset`` or a container's
    cpuset set it; else all of the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_count(workers: int | None) -> int:
    """``workers`` processes at most (None: no cap), and no more than ``usable_cpus()``."""
    if workers is None:
        return usable_cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(
            f"workers is {workers!r}: allowed an int >= 1 (the most processes that encode)"
        )
    return min(workers, usable_cpus())


def shareable(tokenizer: Tokenizer) -> bool:
    """Whether workers can rebuild ``tokenizer`` from its JSON: glassformer's char, word or
    BPE tokenizer, none of whose methods was replaced on the object itself."""
    return type(tokenizer) in SHAREABLE and not {"encode", "encode_batch"} & set(vars(tokenizer))


def encode(tokenizer: Tokenizer, batch: Batch, dtype: np.dtype) -> Answer:
    """The answer to a batch: ``encode_records`` of ``Records``, else ``encode_parts``."""
    if isinstance(batch, Records):
        return encode_records(tokenizer, batch, dtype)
    return encode_parts(tokenizer, batch, dtype)


def encode_parts(tokenizer: Tokenizer, parts: Sequence[Part], dtype: np.dtype) -> np.ndarray:
    """The ids of a batch, one after another, as ``dtype``: each text encoded (several texts in
    one ``encode_batch`` call), each int as it is."""
    texts = [p for p in parts if isinstance(p, str)]
    encoded = iter(
        tokenizer.encode_batch(texts) if len(texts) > 1 else map(tokenizer.encode, texts)
    )
    arrays = [np.array([p] if isinstance(p, int) else next(encoded), dtype=dtype) for p in parts]
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def encode_records(
    tokenizer: Tokenizer, records: Records, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """``(ids (N,) dtype, lengths (n,) int64)``: the ids ``[<BOS>] ids <EOS>`` of each of the
    n texts, one after another (one ``encode_batch`` call), and each text's count of ids."""
    ids = tokenizer.encode_batch(list(records.texts), add_bos=records.add_bos, add_eos=True)
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype, int(lengths.sum()))
    return flat, lengths


class _Pool:
    """``workers`` processes that each rebuild ``tokenizer`` and do ``job`` ("encode", into
    arrays of ``dtype``, or "count") on the batches they are sent (the module docstring); use
    it as a context manager."""

    def __init__(
        self, tokenizer: Tokenizer, workers: int, job: str, dtype: np.dtype | None = None
    ) -> None:
        if not shareable(tokenizer):
            raise ValueError(
                f"{type(tokenizer).__name__} cannot be sent to worker processes: allowed a "
                "char, word or bpe tokenizer"
            )
        self._procs: list[subprocess.Popen[bytes]] = []
        try:
            for _ in range(workers):
                try:
                    self._procs.append(_start_worker())
                except OSError as err:  # not a cache folder's error (token_cache.py)
                    raise RuntimeError(f"a tokenizer worker process cannot start ({err})") from err
            start = (job, tokenizer.to_dict(), None if dtype is None else np.dtype(dtype).str)
            for proc in self._procs:
                self._send(proc, start)
        except BaseException:
            self._stop(kill=True)
            raise

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [proc.pid for proc in self._procs]

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: Any) -> None:
        self._stop(kill=kind is not None)

    def map(self, batches: Iterable[Batch]) -> Iterator[Any]:
        """The answer to each batch (``encode``'s, or the counts), in order. Batch i goes to
        worker i mod ``workers``, which holds one batch at a time: it is sent the next when its
        answer has been read."""
        busy: deque[subprocess.Popen[bytes]] = deque()  # the workers, oldest batch first
        idle = deque(self._procs)
        for batch in batches:
            if not idle:
                proc = busy.popleft()
                yield self._answer(proc)
                idle.append(proc)
            proc = idle.popleft()
            self._send(proc, batch if isinstance(batch, Records) else list(batch))
            busy.append(proc)
        while busy:
            yield self._answer(busy.popleft())

    def _send(self, proc: subprocess.Popen[bytes], message: Any) -> None:
        try:
            pickle.dump(message, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()  # type: ignore[union-attr]
        except OSError:  # a broken pipe: the worker has ended
            raise self._ended(proc) from None

    def _answer(self, proc: subprocess.Popen[bytes]) -> Any:
        try:
            kind, value = pickle.load(proc.stdout)  # type: ignore[arg-type]
        except (EOFError, OSError, pickle.UnpicklingError):
            raise self._ended(proc) from None
        if kind == "error":
            raise value
        return value

    def _ended(self, proc: subprocess.Popen[bytes]) -> RuntimeError:
        proc.kill()
        code = proc.wait()
        return RuntimeError(f"a tokenizer worker process ({proc.pid}) ended with exit code {code}")

    def _stop(self, kill: bool) -> None:
        """End the workers: they read the end of their input and leave (killed after an
        error, as they may be in the middle of a batch), and are waited for."""
        for proc in self._procs:
            if kill:
                proc.kill()
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
        for proc in self._procs:
            proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]


class EncodePool(_Pool):
    """``workers`` processes that encode batches (parts, or ``Records``) with (a copy of)
    ``tokenizer`` into arrays of ``dtype``: ``map`` gives each batch's answer (``encode``), in
    order."""

    def __init__(self, tokenizer: Tokenizer, workers: int, dtype: np.dtype) -> None:
        super().__init__(tokenizer, workers, "encode", dtype)


class CountPool(_Pool):
    """``workers`` processes that count batches of texts with (a copy of) ``tokenizer``:
    ``map`` gives each batch's ``tokenizer.count(batch)``, a ``Counter``, in order."""

    def __init__(self, tokenizer: Tokenizer, workers: int) -> None:
        super().__init__(tokenizer, workers, "count")


# a worker's first lines: glassformer is imported from where this process imported it (a source
# folder put on sys.path by the caller too), then encode_worker runs
BOOT = (
    "import os, sys\n"
    "root = sys.argv[1]\n"
    "if root not in map(os.path.realpath, sys.path):\n"
    "    sys.path.insert(0, root)\n"
    "from glassformer.tokenizers.encode_worker import main\n"
    "main()\n"
)


def _start_worker() -> subprocess.Popen[bytes]:
    """A new Python process running ``encode_worker.main``."""
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds glassformer/
    return subprocess.Popen(
        [sys.executable, "-c", BOOT, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
