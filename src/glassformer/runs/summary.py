"""What a built run is, as data: ``Run.summary()``, which ``glassformer train`` prints as its
header line (cli/train_report.py words it).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..data import TextDataset
from ..data.documents import TextPart
from ..tasks import TASKS

__all__ = ["held_out", "overflow", "run_summary"]


def run_summary(run) -> dict[str, Any]:
    """The task, data, tokenizer, model and training of ``run`` (built: after ``build()``).

    Keys: task, data (its file or dataset name), unit ("text" for lm and mlm, "example"),
    train_examples, val_examples (None without validation), tokenizer, tokens (the ids the run
    can use), model (the preset, or "pretrained"), parameters, trained and total (the
    parameters that train, of all those the optimizer sees: LoRA's adapters included),
    context (the longest window trained on), device, step (where it starts), steps, out,
    start (what a run started from a pre-trained model took from it, or None), held_out (the
    part of the training file that validates the run, `held_out`) and overflow (the examples
    longer than max_len, `overflow`).
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
        "held_out": held_out(plan, run.val_data),
        "overflow": overflow(encoded_splits(run), model.config.max_len),
    }


def encoded_splits(run) -> dict[str, tuple[TextDataset, Any]]:
    """``{"training": (read, encoded), "validation": ...}``: each split's data as read and as
    the trainer encoded them."""
    trainer = run.trainer
    splits = {"training": (run.train_data, trainer.train_stream.dataset)}
    if run.val_data is not None:
        splits["validation"] = (run.val_data, trainer.val_stream.dataset)
    return splits


def held_out(plan, validation: TextDataset | None) -> dict[str, Any] | None:
    """Which part of the training file validates the run; None when it has no such part
    (no validation, or a file of its own).

    Keys: file (its name), fraction (``data.val_fraction``), unit ("characters", "lines",
    "rows" or "files"), count (how many are held out), spread (False: the last part of a
    whole text; True: every 1/fraction-th line, row or file).
    """
    fraction = plan.data_options.get("val_fraction")
    if validation is None or not fraction or plan.validation != plan.data:
        return None
    shown = {"file": Path(plan.data).name, "fraction": float(fraction)}
    if isinstance(validation.part, TextPart):  # a whole text: its last part
        return {**shown, "unit": "characters", "count": validation.part.chars, "spread": False}
    unit = "lines" if validation.task == "lm" and validation.unit == "line" else "rows"
    if validation.unit == "file":
        unit = "files"
    return {**shown, "unit": unit, "count": len(validation), "spread": True}


def overflow(splits: dict[str, tuple[TextDataset, Any]], max_len: int) -> dict[str, Any] | None:
    """The examples longer than ``max_len`` that were truncated or dropped (``data.overflow``),
    from ``{"training": (read, encoded), "validation": ...}``; None when there were none (or
    for a language model, whose text is cut into windows).

    Keys: policy ("truncate" or "drop"), unit ("pairs" or "texts"), max_len, and counts:
    split name -> (examples cut or dropped, examples in the split).
    """
    counts = {}
    for name, (read, encoded) in splits.items():
        n = getattr(encoded, "num_truncated", 0) + getattr(encoded, "num_dropped", 0)
        counts[name] = (n, len(read))
    read = next(iter(splits.values()))[0]
    if read.task == "lm" or not any(n for n, _ in counts.values()):
        return None
    unit = "pairs" if read.task == "seq2seq" else "texts"
    policy = "drop" if read.overflow == "drop" else "truncate"
    return {"policy": policy, "unit": unit, "max_len": max_len, "counts": counts}
