"""The library's notes as the command line shows them. The library warns, with a category of
its own, where it tells rather than stops: weights of a Hugging Face folder left unused or a
head started anew (WeightsNote), a token cache that cannot be written (CacheNote), a killed
run's lock replaced (StaleLockWarning), bf16 emulated on this CPU (SlowBfloat16Warning), a
setting that does little (RunNote). The command line shows each as one line on stderr,
``glassformer: note: ...``, with the flags of the settings it names (hints.py), every time it
is raised; other warnings as Python shows them.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator

from ..data.token_cache import CacheNote
from ..interop.huggingface.folder_checks import WeightsNote
from ..runs import RunNote
from ..training.lock import StaleLockWarning
from ..training.runtime import SlowBfloat16Warning
from .hints import with_flags

__all__ = ["NOTES", "shown_notes"]

NOTES = (CacheNote, RunNote, SlowBfloat16Warning, StaleLockWarning, WeightsNote)


@contextlib.contextmanager
def shown_notes() -> Iterator[None]:
    """Show the library's notes (the module docstring) while the block runs."""
    with warnings.catch_warnings():
        for kind in NOTES:
            warnings.simplefilter("always", kind)
        original = warnings.showwarning

        def show(message, category, *args, **kwargs):
            if issubclass(category, NOTES):
                print(f"glassformer: note: {with_flags(message)}", file=sys.stderr, flush=True)
            else:
                original(message, category, *args, **kwargs)

        warnings.showwarning = show
        yield
