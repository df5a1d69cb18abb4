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
import warnings
from pathlib import Path
from typing import Any

import torch

from ..generation import GenerationConfig
from ..runs import Run, RunInterrupted
from ..runs.claim import differences
from ..runs.data_identity import ACCEPT_FLAG
from ..runs.datasets import held_out_line, overflow_line
from ..runs.fits import memory_advice
from ..runs.plan import RunPlan, make_plan
from ..runs.record import holds_run
from ..runs.scale import note_scale
from ..runs.settings import builtin_config_path, to_toml
from ..tasks import TASKS
from ..training import DiskFullError, Trainer, TrainingError
from ..training.layout import CHECKPOINTS
from ..training.lock import StaleLockWarning
from ..training.runtime import SlowBfloat16Warning
from .errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted, UsageError
from .textgen import continue_text
from .threads import use_free_cores
from .train_args import DEFINES_RUN, DEMO, gather_settings

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
        run.load(progress=shown)
        built.update(plan=plan, config=run.model_config, architecture=run.architecture)
        if getattr(args, "free_cores", False):  # run as a command: threads.py
            use_free_cores()
        trainer = run.build(progress=shown)
        _print_header(run, builtin, settings)
        try:
            with _notes():
                run.fit(then=lambda last: _print_summary(run, last, main))
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
        raise UsageError(f"out of memory ({first}); {memory_advice(**built)}") from None
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
    note_scale()
    if _rerun_of_demo(args, builtin, settings):
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
            out, given if defines else None, changes, data_changed_ok=args.data_changed_ok
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
            raise UsageError(f"{ACCEPT_FLAG} applies to --resume, which is not given")
        run = Run.from_settings(settings)
    return run, builtin, settings


@contextlib.contextmanager
def _notes():
    """Show a ``StaleLockWarning`` (a killed run's lock replaced) and a
    ``SlowBfloat16Warning`` (bf16 emulated on this CPU) as one note line each."""
    original = warnings.showwarning

    def show(message, category, *args, **kwargs):
        if issubclass(category, (StaleLockWarning, SlowBfloat16Warning)):
            print(f"glassformer: note: {message}", file=sys.stderr, flush=True)
        else:
            original(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


def out_of_memory(err: BaseException) -> bool:
    """Is ``err`` torch failing to allocate memory (on any device)?"""
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or any(m in text for m in OOM_WORDS)


def _rerun_of_demo(args: argparse.Namespace, builtin, settings) -> bool:
    """``glassformer train`` with no options, a second time: continue the demo run
    instead of refusing its folder; not another run kept there (e.g. ``--data shakespeare``'s,
    whose default folder is the demo's)."""
    plain = not args.set and all(getattr(args, k) is None for k in ("out", "steps", "seed"))
    if not (builtin == DEMO and args.config is None and plain):
        return False
    plan = make_plan(settings)
    return holds_run(plan.out) and differences(plan) == []


def _usable_ids(trainer) -> int:
    """The ids a run can use: the tokenizer's, less a role placed past the model's rows (a
    pretrained decoder's ``<MASK>``, which no LM task uses)."""
    return min(trainer.tokenizer.vocab_size, trainer.model.config.vocab_size)


def _print_header(run: Run, builtin, settings) -> None:
    plan, trainer, train_data, val_data = run.plan, run.trainer, run.train_data, run.val_data
    if builtin is not None:
        print(f"glassformer: built-in config {builtin!r} ({builtin_config_path(builtin)})")
    print(to_toml(settings).rstrip() + "\n")
    model = trainer.model
    unit = "text" if TASKS[plan.task].data == "lm" else "example"
    val = _count(len(val_data), f"validation {unit}") if val_data is not None else None
    print(
        f"{plan.task} on {Path(plan.data).name}: {_count(len(train_data), f'training {unit}')}, "
        f"{val or 'no validation'}; "
        f"{plan.tokenizer} tokenizer ({_usable_ids(trainer)} tokens); "
        f"{plan.preset} model ({model.num_parameters() / 1e6:.2f}M parameters"
        f"{_trained(trainer)}, context {trainer.window()}) on {trainer.device}"
    )
    encoded = {"training": (train_data, trainer.train_stream.dataset)}
    if val_data is not None:
        encoded["validation"] = (val_data, trainer.val_stream.dataset)
    for line in (held_out_line(plan, val_data), overflow_line(encoded, model.config.max_len)):
        if line is not None:
            print(line)
    if run.start is not None:  # what came from --init-from, and the fine-tuning settings
        train = plan.train
        print(f"{run.start.line()}; train.lr={train.lr:g}, train.warmup={train.warmup}")
    start = f"resuming at step {run.step}" if run.checkpoint is not None else "training"
    print(f"{start} to step {plan.train.steps}; run directory: {plan.out}", flush=True)


def _trained(trainer: Trainer) -> str:
    """``, 12,288 train`` when only part of the model trains (frozen parts, LoRA), else ``""``."""
    n = trainer.trained
    if n == trainer.total:
        return ""
    return f", {n / 1e6:.2f}M train" if n >= 10_000 else f", {n:,} train"


def _count(n: int, noun: str) -> str:
    """``1 training text``, ``34 training texts``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_summary(run: Run, last: dict[str, Any], main: bool) -> None:
    plan, trainer = run.plan, run.trainer
    val = {k[4:]: v for k, v in last.items() if k.startswith("val_")}
    if val:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in val.items())
        print(f"step {trainer.step}: validation {shown}")
    elif "loss" in last:
        print(f"step {trainer.step}: training loss {last['loss']:.4f} (no validation data)")
    if plan.task == "lm" and plan.sample.max_new_tokens > 0:
        _print_sample(plan, trainer)  # every process: a sharded model needs them all
    if not main:
        return
    if run.loss_plot is None:
        print("loss.png: matplotlib is not installed (pip install 'glassformer[plot]')")
    else:
        print(f"loss curve: {run.loss_plot}")
    if run.tensorboard is not None:
        print(f"TensorBoard logs: {run.tensorboard} (tensorboard --logdir {run.tensorboard})")
    print(f"checkpoints: {plan.out / CHECKPOINTS}")


def _print_sample(plan: RunPlan, trainer: Trainer) -> None:
    s = plan.sample
    seed = plan.train.seed if s.seed is None else s.seed
    config = GenerationConfig(
        max_new_tokens=s.max_new_tokens,
        temperature=s.temperature,
        top_k=s.top_k,
        top_p=s.top_p,
        seed=seed,
    )
    print(f"sample (temperature {s.temperature}, seed {seed}):")
    sys.stdout.write(s.prompt)
    for piece in continue_text(trainer.model, trainer.tokenizer, s.prompt, config):
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
