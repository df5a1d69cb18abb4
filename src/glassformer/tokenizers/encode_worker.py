"""A worker process of ``parallel.EncodePool`` and ``parallel.CountPool`` (``main``).

It reads pickled messages on stdin and answers each on stdout: first its job ("encode" or
"count"), a tokenizer's JSON dict and a numpy type (None to count) (answered with nothing), then
batches, each answered with ``("ids", answer)`` (lists of texts and ids, or ``parallel.Records``,
to encode: ``parallel.encode``), ``("counts", Counter)`` (a list of texts to count:
``tokenizer.count``) or ``("error", exception)``. It ends when stdin closes, or stdout does (the
process that started it has ended). Ctrl-C is ignored here: the process that started the worker
stops it.
"""

from __future__ import annotations

import pickle
import signal
import sys

import numpy as np

from .base import Tokenizer
from .parallel import encode


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read, write = sys.stdin.buffer, sys.stdout.buffer
    try:
        job, tokenizer_dict, dtype = pickle.load(read)
    except EOFError:
        return
    tokenizer = Tokenizer.from_dict(tokenizer_dict)
    dtype = None if dtype is None else np.dtype(dtype)
    while True:
        try:
            batch = pickle.load(read)
        except EOFError:
            return
        try:
            answer = _work(job, tokenizer, dtype, batch)
        except Exception as err:
            answer = ("error", _picklable(err))
        try:
            pickle.dump(answer, write, protocol=pickle.HIGHEST_PROTOCOL)
            write.flush()
        except BrokenPipeError:
            return


def _work(job: str, tokenizer: Tokenizer, dtype: np.dtype | None, batch: list) -> tuple:
    """The answer to one batch: its ids, or its counts."""
    if job == "count":
        return ("counts", tokenizer.count(batch))
    return ("ids", encode(tokenizer, batch, dtype))


def _picklable(err: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err
