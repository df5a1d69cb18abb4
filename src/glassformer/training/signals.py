"""Stopping a run from outside: Ctrl-C (SIGINT) or SIGTERM asks the training loop to stop.

While ``stop_requests(on_stop)`` is entered, either signal calls ``on_stop(signum)`` and
nothing else: the loop sees the request after the step it is running, saves a checkpoint
and returns (the Trainer sets ``interrupted`` and ``stop_signal``). On leaving, the handlers
that were there before come back. Python lets only the main thread set handlers; in another
thread nothing changes and the signals keep their handlers.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["stop_requests"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_requests(on_stop: Callable[[int], None]) -> Iterator[None]:
    """SIGINT and SIGTERM call ``on_stop(signum)`` while inside; the old handlers after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        on_stop(signum)

    old = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
