"""``glassformer train --resume``: the run's own plan, checked against the options given."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .errors import UsageError
from .plan import RunPlan, make_plan
from .runs import read_run
from .scale import scaled_steps
from .train_args import DEFINES_RUN, gather_settings

__all__ = ["comparable", "nothing_to_do", "resumed_plan"]


def resumed_plan(args: argparse.Namespace, out: Path) -> tuple[RunPlan, Any]:
    """The plan in <out>/run.json, with a new --steps / --device / --strategy, after checking
    that the other options given (on top of the run's own settings) do not change it."""
    stored, model_cfg = read_run(out)
    if any(getattr(args, name) not in (None, []) for name in DEFINES_RUN):
        given = make_plan(gather_settings(args, base=stored.settings)[0])
        before, now = comparable(stored), comparable(given)
        for key in sorted(set(before) | set(now)):
            if before.get(key) != now.get(key):
                raise UsageError(
                    f"--resume continues {out} as it was started, with {key}="
                    f"{before.get(key)!r}, but the options give {now.get(key)!r}; leave that "
                    "option out, or start a new run with another --out"
                )
        stored.sample = given.sample  # what to print at the end may change
        stored.settings["sample"] = dict(given.settings.get("sample", {}))
    may_change = ("steps", "device", "strategy")  # a run moves between machines and strategies
    changes = {k: getattr(args, k) for k in may_change if getattr(args, k) is not None}
    if "steps" in changes:
        changes["steps"] = scaled_steps(changes["steps"])  # GLASSFORMER_TEST_SCALE, scale.py
    stored.train = stored.train.replace(**changes)
    stored.settings.setdefault("train", {}).update(changes)
    stored.out = out
    return stored, model_cfg


def comparable(plan: RunPlan) -> dict[str, Any]:
    """The plan flattened to "key" -> value, without what --resume may change and without
    the data's identity (data_identity.py checks it once the data are loaded)."""
    d = plan.to_dict()
    flat: dict[str, Any] = {}
    for key, value in d.items():
        if key in ("out", "settings", "sample", "data_identity"):
            continue
        if key == "train":
            flat.update(
                {
                    f"train.{k}": v
                    for k, v in value.items()
                    if k not in ("steps", "device", "strategy")
                }
            )
        elif key in ("data_options", "model_overrides", "tokenizer_options"):
            prefix = {"data_options": "data", "model_overrides": "model"}.get(key, "tokenizer")
            flat.update({f"{prefix}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def nothing_to_do(plan: RunPlan, step: int) -> int:
    """A run resumed at ``step`` >= its --steps: refuse a smaller --steps, else say so."""
    if step > plan.train.steps:
        raise UsageError(
            f"--steps {plan.train.steps} is below step {step}, which {plan.out} has reached"
        )
    print(
        f"{plan.out} has already reached step {step}; to train on: glassformer train --out "
        f"{plan.out} --resume --steps N, with N above {step}"
    )
    return 0
