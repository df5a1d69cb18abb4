"""``glassformer train``: plan the run, load its data, train, then report: the final
validation metrics, a sample (language models), loss.png and TensorBoard logs.

The options and the settings they give are in train_args; --resume in resume.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import sys
from pathlib import Path
from typing import Any

import torch

from ..runs import (
    ADVICE_NAMES,
    Run,
    RunInterrupted,
    differences,
    holds_run,
    make_plan,
    memory_advice,
)
from ..training import DiskFullError, TrainingError
from .errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted, UsageError
from .hints import as_flags
from .notes import shown_notes
from .scale import scale_from_env
from .threads import use_free_cores
from .train_args import DEFINES_RUN, DEMO, gather_settings
from .train_report import print_header, print_summary

__all__ = ["run"]

# how torch says an allocation failed: CUDA / MPS, and the CPU allocator
OOM_WORDS = ("out of memory", "can't allocate memory", "not enough memory")


def run(args: argparse.Namespace) -> int:
    """Train as ``args`` say; 0 when the run reached its steps. Under torchrun every process
    runs this; only the first one (RANK 0) prints and writes files."""
    main = int(os.environ.get("RANK", "0")) == 0
    built: dict[str, Any] = {}  # the plan and the model's config and class, once known
    quiet = contextlib.nullcontext() if main else contextlib.redirect_stdout(io.StringIO())
    command = getattr(args, "free_cores", False)  # run as the glassformer command
    with _memory_advice(built, command), quiet:
        run, builtin, settings = _the_run(args)
        if run is None:  # a resumed run that has reached its steps
            return 0
        plan = run.plan
        shown = "bar" if sys.stderr.isatty() else "lines"  # a log file or pipe gets lines
        with shown_notes():
            run.load(progress=shown)
        built.update(plan=plan, config=run.model_config, architecture=run.architecture)
        if getattr(args, "free_cores", False):  # run as a command: threads.py
            use_free_cores()
        with shown_notes():
            trainer = run.build(progress=shown)
        print_header(run, builtin, settings)
        try:
            with shown_notes():
                run.fit(then=lambda last: print_summary(run, last, main))
        except DiskFullError as err:
            raise TrainingError(
                f"{err}; free some space, then continue with: glassformer train --out "
                f"{plan.out} --resume (add --set train.keep_last=1 to keep fewer checkpoints)"
            ) from None
        except RunInterrupted as stop:
            terminated = stop.signal == signal.SIGTERM
            raise Interrupted(
                f"{'terminated' if terminated else 'interrupted'} at step {trainer.step}; saved "
                f"in {plan.out}; continue with: glassformer train --out {plan.out} --resume",
                EXIT_TERMINATED if terminated else EXIT_INTERRUPTED,
            ) from None
        return 0


@contextlib.contextmanager
def _memory_advice(built: dict[str, Any], command: bool = False):
    """Out of memory: one line with advice for the plan in ``built``; under torchrun, the
    process group ends with the run, and a ``command`` that trained to the end leaves at once
    (``_leave``)."""
    try:
        yield
    except RuntimeError as err:
        if not out_of_memory(err):
            raise
        first = str(err).strip().splitlines()[0][:160] if str(err).strip() else type(err).__name__
        advice = as_flags(memory_advice(**built), names=ADVICE_NAMES)
        raise UsageError(f"out of memory ({first}); {advice}") from None
    else:
        if command and torch.distributed.is_initialized():
            _leave()
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def _leave() -> None:
    """End a distributed run that reached its end: every process meets the others, ends the
    process group and exits with status 0 without the interpreter's shutdown. At shutdown a
    gloo worker thread may still be releasing a finished collective; Python ends such a thread
    with pthread_exit, and unwinding it through a C++ destructor aborts the process
    ("terminate called without an active exception"). Everything is written and closed by now."""
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _the_run(args: argparse.Namespace) -> tuple[Run | None, str | None, dict[str, Any]]:
    """(the run ``args`` ask for, new or resumed; the built-in config it started from or None;
    its settings); the run is None when a resumed run has reached its steps already."""
    settings, builtin = gather_settings(args)
    scale = scale_from_env()
    if _rerun_of_demo(args, builtin, settings, scale):
        print(
            f"glassformer: {make_plan(settings).out} holds the demo run; continuing it (delete "
            "that folder to train it again)"
        )
        args.resume = True
    if args.resume:
        out = Path(args.out) if args.out else make_plan(settings).out

        def given(own):  # the options on top of the run's own settings, checked against them
            return gather_settings(args, base=own)[0]

        defines = any(getattr(args, name) not in (None, []) for name in DEFINES_RUN)
        changes = {k: getattr(args, k) for k in ("steps", "device", "strategy")}
        run = Run.resume_with(
            out,
            given if defines else None,
            changes,
            data_changed_ok=args.data_changed_ok,
            scale=scale,
        )
        settings, builtin = run.plan.settings, None
        if run.done:
            print(
                f"{run.plan.out} has already reached step {run.step}; to train on: glassformer "
                f"train --out {run.plan.out} --resume --steps N, with N above {run.step}"
            )
            return None, builtin, settings
    else:
        if args.data_changed_ok:
            raise UsageError("--data-changed-ok applies to --resume, which is not given")
        run = Run.from_settings(settings, scale=scale)
    return run, builtin, settings


def out_of_memory(err: BaseException) -> bool:
    """Is ``err`` torch failing to allocate memory (on any device)?"""
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or any(m in text for m in OOM_WORDS)


def _rerun_of_demo(args: argparse.Namespace, builtin, settings, scale: float | None) -> bool:
    """``glassformer train`` with no options, a second time: continue the demo run
    instead of refusing its folder; not another run kept there (e.g. ``--data shakespeare``'s,
    whose default folder is the demo's)."""
    plain = not args.set and all(getattr(args, k) is None for k in ("out", "steps", "seed"))
    if not (builtin == DEMO and args.config is None and plain):
        return False
    plan = make_plan(settings, scale=scale)
    return holds_run(plan.out) and differences(plan) == []
