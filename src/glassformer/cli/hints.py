"""The command line's words for what a library error names: the flag that gives each Python
argument, setting and method it names (glassformer/named.py).

    init_from runs/x: not a model ...   ->  --init-from runs/x: not a model ...
    lower train.lr (e.g. train.lr=5e-4) ->  lower train.lr (e.g. --set train.lr=5e-4)
    give train.steps=N with N >= 1      ->  give --steps N with N >= 1
    continue it with Run.resume         ->  continue it with --resume

The argument is replaced where the message opens with it. A name with an option of its own
becomes that option where it is assigned (``name=value``; ``name=True`` of a switch alone),
and where named when it is no plain word (``run.out``, ``init_from``, not ``data``); a setting
without one becomes ``--set`` where it is assigned, and stays where named.
"""

from __future__ import annotations

import re

__all__ = ["FLAGS", "as_flags", "with_flags"]

# Python arguments (Run.plan's keywords, the commands' own), and the settings and methods
# that an option gives
FLAGS = {
    "checkpoint": "--checkpoint",
    "config": "--config",
    "data": "--data",
    "data_changed_ok": "--data-changed-ok",
    "device": "--device",
    "init_from": "--init-from",
    "model": "--model",
    "out": "--out",
    "pad_to": "--pad-to",
    "port": "--port",
    "seed": "--seed",
    "setting": "--set",
    "steps": "--steps",
    "strategy": "--strategy",
    "target": "--target",
    "task": "--task",
    "text": "--text",
    "tokenizer": "--tokenizer",
    "val_data": "--val-data",
    "vocab_size": "--vocab-size",
    "Run.resume": "--resume",
    **{f"run.{k}": f"--{k.replace('_', '-')}" for k in ("task", "data", "val_data", "tokenizer")},
    **{f"run.{k}": f"--{k.replace('_', '-')}" for k in ("vocab_size", "model", "init_from")},
    "run.out": "--out",
    **{f"train.{k}": f"--{k}" for k in ("steps", "seed", "device", "strategy")},
}


def with_flags(err: BaseException) -> str:
    """``err``'s message in the command line's words (the module docstring)."""
    return as_flags(str(err), getattr(err, "argument", None), getattr(err, "names", ()))


def as_flags(message: str, argument: str | None = None, names=()) -> str:
    """``message``, which opens with ``argument`` and names ``names``, in the command line's
    words (the module docstring)."""
    if argument in FLAGS and message.startswith(f"{argument} "):
        message = FLAGS[argument] + message[len(argument) :]
    for name in names:
        flag, word = FLAGS.get(name), rf"(?<![\w.-]){re.escape(name)}"
        if flag is None:
            message = re.sub(f"{word}=", f"--set {name}=", message)
            continue
        message = re.sub(rf"{word}=True\b", flag, message)
        message = re.sub(f"{word}=", f"{flag} ", message)
        if "." in name or "_" in name:  # not a plain word ("data") that a sentence may use
            message = re.sub(rf"{word}(?![\w=])", flag, message)
    return message
