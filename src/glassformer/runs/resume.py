"""Resuming a run: its own plan from run.json, checked against the settings given."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..models.config import ModelConfig
from .errors import RunError
from .plan import RunPlan, make_plan
from .record import read_run
from .scale import scaled
from .settings import Settings

__all__ = ["DATA_MAY_SET", "MAY_CHANGE", "MAY_SET", "check_reached", "comparable", "resumed_plan"]

# what a resumed run may change: it moves between machines and strategies, and extends
MAY_CHANGE = ("steps", "device", "strategy")
# [train] settings a resumed run may change with --set: what is kept of it, not what it
# computes (after a full disk, fewer checkpoints kept is what makes room)
MAY_SET = ("keep_last",)
# [data] settings a resumed run may change with --set: how its data are encoded, not what
# they are
DATA_MAY_SET = ("workers", "tokenizer_sample")


def resumed_plan(
    out: Path,
    given: Callable[[Settings], Settings] | None = None,
    changes: dict[str, Any] | None = None,
    scale: float | None = None,
) -> tuple[RunPlan, ModelConfig]:
    """The plan in <out>/run.json with ``changes`` to what may change (steps, device,
    strategy), after checking that the settings ``given`` makes on top of the run's own do not
    change the rest (only the [sample] table, the [train] keys in MAY_SET and the [data] keys
    in DATA_MAY_SET may change). ``scale``: a new ``steps`` is scaled as the run was
    (scale.py)."""
    stored, model_cfg = read_run(out)
    if given is not None:
        wanted, before = given(stored.settings), comparable(stored)
        try:
            now_plan = make_plan(wanted, scale=scale)
        except RunError:  # e.g. the run's train.momentum with another train.optimizer: name
            # the setting changed rather than the error it leads to
            given_now = {k: v for k, v in _flat(wanted).items() if k in before}
            _refuse_changes(out, {k: before[k] for k in given_now}, given_now, model_cfg)
            raise
        now = comparable(now_plan)
        _refuse_changes(out, before, now, model_cfg)
        stored.sample = now_plan.sample  # what to print at the end may change
        stored.settings["sample"] = dict(now_plan.settings.get("sample", {}))
        kept = {k: getattr(now_plan.train, k) for k in MAY_SET}
        stored.train = stored.train.replace(**kept)
        stored.settings.setdefault("train", {}).update(
            {k: v for k, v in kept.items() if k in wanted.get("train", {})}
        )
        for key in DATA_MAY_SET:  # the value given now, else none
            stored.data_options.pop(key, None)
            stored.settings.get("data", {}).pop(key, None)
            if now_plan.data_options.get(key) is not None:
                stored.data_options[key] = now_plan.data_options[key]
                stored.settings.setdefault("data", {})[key] = now_plan.data_options[key]
    changes = {k: v for k, v in (changes or {}).items() if v is not None}
    unknown = sorted(set(changes) - set(MAY_CHANGE))
    if unknown:
        raise RunError(
            f"a resumed run cannot change {', '.join(unknown)}; allowed: {', '.join(MAY_CHANGE)}"
        )
    if "steps" in changes and scale is not None:
        changes["steps"] = scaled(changes["steps"], scale)
    stored.train = stored.train.replace(**changes)
    stored.settings.setdefault("train", {}).update(changes)
    stored.out = out
    return stored, model_cfg


def _refuse_changes(
    out: Path, before: dict[str, Any], now: dict[str, Any], model_cfg: ModelConfig
) -> None:
    """RunError naming the first setting whose value ``now`` is not the one ``before``; a
    model setting the run left unset is shown as the run's model has it (a preset's or a
    pre-trained model's value)."""
    for key in sorted(set(before) | set(now)):
        if before.get(key) != now.get(key):
            was = f"{key}={before.get(key)!r}"
            section, _, field = key.partition(".")
            if before.get(key) is None and section == "model" and hasattr(model_cfg, field):
                value = getattr(model_cfg, f"resolved_{field}", getattr(model_cfg, field))
                was = f"{key}={value!r} (its model's value)"
            raise RunError(
                f"Run.resume continues {out} as it was started, with {was}, but the options "
                f"give {now.get(key)!r}; leave that option out, or start a new run with "
                "another run.out",
                names=["Run.resume", "run.out"],
            )


def _flat(settings: Settings) -> dict[str, Any]:
    """The [train] and [model] tables as "train.lr" -> value, what may change left out."""
    return {
        f"{section}.{key}": value
        for section in ("train", "model")
        for key, value in settings.get(section, {}).items()
        if not (section == "train" and key in MAY_CHANGE + MAY_SET)
    }


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
                {f"train.{k}": v for k, v in value.items() if k not in MAY_CHANGE + MAY_SET}
            )
        elif key in ("data_options", "model_overrides", "tokenizer_options"):
            prefix = {"data_options": "data", "model_overrides": "model"}.get(key, "tokenizer")
            flat.update(
                {
                    f"{prefix}.{k}": v
                    for k, v in value.items()
                    if not (prefix == "data" and k in DATA_MAY_SET)
                }
            )
        else:
            flat[key] = value
    return flat


def check_reached(plan: RunPlan, step: int) -> None:
    """A run resumed at ``step``: refuse a --steps below it."""
    if step > plan.train.steps:
        raise RunError(
            f"train.steps={plan.train.steps} is below step {step}, which {plan.out} has reached",
            names=["train.steps"],
        )
