"""What a built run is, as data: ``Run.summary()``, which ``glassformer train`` prints as its
header line (cli/train_report.py words it).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..tasks import TASKS

__all__ = ["run_summary"]


def run_summary(run) -> dict[str, Any]:
    """The task, data, tokenizer, model and training of ``run`` (built: after ``build()``).

    Keys: task, data (its file or dataset name), unit ("text" for lm and mlm, "example"),
    train_examples, val_examples (None without validation), tokenizer, tokens (the ids the run
    can use), model (the preset, or "pretrained"), parameters, trained and total (the
    parameters that train, of all those the optimizer sees: LoRA's adapters included),
    context (the longest window trained on), device, step (where it starts), steps, out, and
    start (what a run started from a pre-trained model took from it, or None).
    """
    plan, trainer = run.plan, run.trainer
    model = trainer.model
    return {
        "task": plan.task,
        "data": Path(plan.data).name,
        "unit": "text" if TASKS[plan.task].data == "lm" else "example",
        "train_examples": len(run.train_data),
        "val_examples": None if run.val_data is None else len(run.val_data),
        "tokenizer": plan.tokenizer,
        # a role placed past the model's rows (a pretrained decoder's <MASK>) is not usable
        "tokens": min(trainer.tokenizer.vocab_size, model.config.vocab_size),
        "model": plan.preset,
        "parameters": model.num_parameters(),
        "trained": trainer.trained,
        "total": trainer.total,
        "context": trainer.window(),
        "device": str(trainer.device),
        "step": run.step,
        "steps": plan.train.steps,
        "out": str(plan.out),
        "start": None if run.start is None else dataclasses.asdict(run.start),
    }
