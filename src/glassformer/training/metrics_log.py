"""metrics.jsonl: one JSON object per line, a step's metrics or an event
(``{"step": 7, "event": "interrupted"}``), written by the first process only and handed to an
``on_log`` callback as well. A number that is not finite is written ``null``
(divergence.py's ``finite_record``), so that every line is standard JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..safe_write import append_text, write_text
from .divergence import finite_record

__all__ = ["MetricsLog"]


class MetricsLog:
    """The records of a run: into ``run_dir/metrics.jsonl`` (None: no file) and to
    ``on_log``; ``main``: this process writes (under torchrun, the first one only)."""

    def __init__(
        self,
        run_dir: Path | None,
        on_log: Callable[[dict[str, Any]], None] | None = None,
        main: bool = True,
    ) -> None:
        self.path = None if run_dir is None or not main else run_dir / "metrics.jsonl"
        self.on_log, self.main = on_log, main

    def start(self) -> None:
        """A new run: an empty metrics.jsonl (a resumed run keeps its own, cut to its step)."""
        if self.path is not None:
            write_text(self.path, "")

    def write(self, record: dict[str, Any]) -> None:
        if not self.main:
            return
        if self.on_log is not None:
            self.on_log(record)
        if self.path is not None:
            line = json.dumps(finite_record(record), allow_nan=False)
            append_text(self.path, line + "\n")
