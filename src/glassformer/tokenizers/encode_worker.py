"""A worker process of ``parallel.EncodePool`` (``main``).

It reads pickled messages on stdin and answers each on stdout: first a tokenizer's JSON dict
and a numpy type (answered with nothing), then batches (lists of texts and ids, or
``parallel.Records``), each answered with ``("ids", answer)`` (``parallel.encode``) or
``("error", exception)``. It ends when stdin closes, or stdout does (the process that started
it has ended). Ctrl-C is ignored here: the process that started the worker stops it.
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
        tokenizer_dict, dtype = pickle.load(read)
    except EOFError:
        return
    tokenizer, dtype = Tokenizer.from_dict(tokenizer_dict), np.dtype(dtype)
    while True:
        try:
            batch = pickle.load(read)
        except EOFError:
            return
        try:
            answer = ("ids", encode(tokenizer, batch, dtype))
        except Exception as err:
            answer = ("error", _picklable(err))
        try:
            pickle.dump(answer, write, protocol=pickle.HIGHEST_PROTOCOL)
            write.flush()
        except BrokenPipeError:
            return


def _picklable(err: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err
