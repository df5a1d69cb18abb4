"""What a run shows while it trains, on stderr (where progress bars go):

"bar"    a terminal: a tqdm progress bar (loss, learning rate, tokens/s, time left), with
         each evaluation's result printed above it
"lines"  a log file, a pipe, CI: one line every ``log_every`` steps and one per evaluation,
         e.g. ``step 20/100: loss 2.1234, lr 1.00e-03, 5,120 tokens/s, 1m 05s left``
"none"   nothing (metrics.jsonl still holds every record)

``Work`` shows other work of a known size the same way (``glassformer eval``: the examples
scored, then those decoded): a bar, or a line at each tenth, e.g.
``eval, greedy decoding: 640/2,000 examples (32%), 1m 05s left``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["MODES", "Progress", "Work", "progress_mode", "say"]

MODES = ("bar", "lines", "none")


def progress_mode(progress: bool | str) -> str:
    """Trainer's ``progress`` argument as a mode: True = "bar", False = "none"."""
    if progress is True or progress is False:
        return "bar" if progress else "none"
    if progress not in MODES:
        raise ValueError(
            f"progress={progress!r} is not known; choose True, False or one of {MODES}"
        )
    return progress


def say(line: str) -> None:
    """One line of the progress display (a mode other than "none" chose it), on stderr: e.g.
    that the tokens come from the cache, or that another process is encoding them."""
    print(line, file=sys.stderr, flush=True)


class Progress:
    """Steps ``initial+1 .. total`` of a run, shown as ``mode`` says."""

    def __init__(self, mode: str, total: int, initial: int) -> None:
        self.mode, self.total, self.initial = mode, total, initial
        self.start = time.perf_counter()
        self.bar = None
        if mode == "bar":
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True)

    def step(self, step: int, loss: float, lr: float, tokens_per_s: float, log: bool) -> None:
        """After optimizer step ``step``; ``log`` says whether it is a step to write down."""
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:,.0f}")
        elif self.mode == "lines" and log:
            left = _duration(self._seconds_left(step))
            self._write(
                f"step {step}/{self.total}: loss {loss:.4f}, lr {lr:.2e}, "
                f"{tokens_per_s:,.0f} tokens/s, {left} left"
            )

    def evaluation(self, step: int, metrics: dict[str, Any]) -> None:
        """The validation metrics at ``step`` (keys without the ``val_`` prefix). The last
        step's are the run's result, which ``fit`` returns (the command prints them)."""
        if step >= self.total:
            return
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
        )
        self._write(f"step {step}: validation {shown}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def _seconds_left(self, step: int) -> float:
        done = step - self.initial
        return (time.perf_counter() - self.start) / max(done, 1) * (self.total - step)

    def _write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        elif self.mode == "lines":
            print(line, file=sys.stderr, flush=True)


class Work:
    """``total`` items of work (``unit``: what one is, plural with an s), shown as ``mode``
    says while ``update`` counts them: a bar described by ``what``, or a line at each tenth
    (and at the end); nothing for "none"."""

    def __init__(self, mode: str, total: int, what: str, unit: str = "example") -> None:
        self.mode, self.total, self.what, self.unit = progress_mode(mode), total, what, unit
        self.done, self.shown_tenths = 0, 0
        self.start = time.perf_counter()
        self.bar = None
        if self.mode == "bar":
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=what, unit=unit, dynamic_ncols=True)

    def update(self, n: int) -> None:
        """``n`` more items are done."""
        self.done = min(self.done + n, self.total)
        if self.bar is not None:
            self.bar.update(n)
            return
        tenths = self.done * 10 // max(self.total, 1)
        if self.mode == "lines" and tenths > self.shown_tenths:
            self.shown_tenths = tenths
            elapsed = time.perf_counter() - self.start
            if self.done >= self.total:
                when = f"done in {_duration(elapsed)}"
            else:
                when = f"{_duration(elapsed / self.done * (self.total - self.done))} left"
            print(
                f"{self.what}: {self.done:,}/{self.total:,} {self.unit}s "
                f"({self.done * 100 // max(self.total, 1)}%), {when}",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 07m``."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"
