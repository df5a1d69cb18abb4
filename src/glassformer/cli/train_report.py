"""What ``glassformer train`` prints: the header (the settings, the data, the tokenizer, the
model and where it trains), and at the end the validation metrics, a sample (language
models) and where the loss curve, the TensorBoard logs and the checkpoints are."""

from __future__ import annotations

import sys
from typing import Any

from ..data.splits import percent
from ..generation import GenerationConfig
from ..runs import Run, RunPlan, builtin_config_path, to_toml
from ..training import Trainer
from ..training.layout import CHECKPOINTS
from .textgen import continue_text

__all__ = ["held_out_line", "overflow_line", "print_header", "print_summary"]


def print_header(run: Run, builtin, settings) -> None:
    plan = run.plan
    if builtin is not None:
        print(f"glassformer: built-in config {builtin!r} ({builtin_config_path(builtin)})")
    print(to_toml(settings).rstrip() + "\n")
    s = run.summary()
    unit = s["unit"]
    val = _count(s["val_examples"], f"validation {unit}") if s["val_examples"] is not None else None
    print(
        f"{s['task']} on {s['data']}: {_count(s['train_examples'], f'training {unit}')}, "
        f"{val or 'no validation'}; {s['tokenizer']} tokenizer ({s['tokens']} tokens); "
        f"{s['model']} model ({s['parameters'] / 1e6:.2f}M parameters"
        f"{_trained(s['trained'], s['total'])}, context {s['context']}) on {s['device']}"
    )
    for line in (held_out_line(s["held_out"]), overflow_line(s["overflow"])):
        if line is not None:
            print(line)
    if run.start is not None:  # what came from --init-from, and the fine-tuning settings
        train = plan.train
        print(f"{_start_line(run.start)}; train.lr={train.lr:g}, train.warmup={train.warmup}")
    start = f"resuming at step {run.step}" if run.checkpoint is not None else "training"
    print(f"{start} to step {plan.train.steps}; run directory: {plan.out}", flush=True)


def _trained(n: int, total: int) -> str:
    """``, 12,288 train`` when only part of the model trains (frozen parts, LoRA), else ``""``."""
    if n == total:
        return ""
    return f", {n / 1e6:.2f}M train" if n >= 10_000 else f", {n:,} train"


def _count(n: int, noun: str) -> str:
    """``1 training text``, ``34 training texts``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def print_summary(run: Run, last: dict[str, Any], main: bool) -> None:
    plan, trainer = run.plan, run.trainer
    val = {k[4:]: v for k, v in last.items() if k.startswith("val_")}
    if val:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in val.items())
        print(f"step {trainer.step}: validation {shown}")
    elif "loss" in last:
        print(f"step {trainer.step}: training loss {last['loss']:.4f} (no validation data)")
    if plan.task == "lm" and plan.sample.max_new_tokens > 0:
        print_sample(plan, trainer)  # every process: a sharded model needs them all
    if not main:
        return
    if run.loss_plot is None:
        print("loss.png: matplotlib is not installed (pip install 'glassformer[plot]')")
    else:
        print(f"loss curve: {run.loss_plot}")
    if run.tensorboard is not None:
        print(f"TensorBoard logs: {run.tensorboard} (tensorboard --logdir {run.tensorboard})")
    print(f"checkpoints: {plan.out / CHECKPOINTS}")


def print_sample(plan: RunPlan, trainer: Trainer) -> None:
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


def held_out_line(held: dict[str, Any] | None) -> str | None:
    """The header line saying which part of the training file validates the run (the
    summary's ``held_out``), if any: ``validation: the last 10% of notes.txt (4,210
    characters)``."""
    if held is None:
        return None
    share, name, n, unit = percent(held["fraction"]), held["file"], held["count"], held["unit"]
    if not held["spread"]:
        return f"validation: the last {share} of {name} ({n:,} {unit})"
    return f"validation: {share} of the {unit} of {name}, spread evenly ({n:,} {unit})"


def overflow_line(cut: dict[str, Any] | None) -> str | None:
    """The header line counting the examples longer than max_len that were truncated or
    dropped (the summary's ``overflow``), if any: ``12 of 5,574 training texts longer than
    max_len 256 were truncated (data.overflow)``."""
    if cut is None:
        return None
    shown = " and ".join(f"{n:,} of {total:,} {name}" for name, (n, total) in cut["counts"].items())
    verb = "dropped" if cut["policy"] == "drop" else "truncated"
    return f"{shown} {cut['unit']} longer than max_len {cut['max_len']} were {verb} (data.overflow)"


def _start_line(report) -> str:
    """``init from PATH: 22.7M parameters from it; new: classifier 384 -> 2``."""
    parts = [f"init from {report.source}: {report.loaded / 1e6:.2f}M parameters from it"]
    parts.append("new: " + (", ".join(report.new) if report.new else "nothing"))
    if report.left_out:
        parts.append("left out: " + ", ".join(report.left_out))
    return "; ".join(parts)
