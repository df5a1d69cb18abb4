"""Checking a checkpoint's training state (trainer.json, trainer.safetensors) against the
model, optimizer and scheduler it is about to be loaded into, before anything is restored.

A file that is cut short, or that lies (a step that is not its folder's, optimizer moments
of another shape, parameters the model does not have, a scheduler of another kind, no RNG
state, the state of another optimizer or fields the optimizer does not keep) is refused with
a ``ValueError`` naming the file and what is wrong; nothing in it is executed or unpickled.
So is a number that would poison the run (a learning rate, weight decay, beta, momentum or
epsilon that is NaN, infinite, negative or out of its range; a scheduler that is not at the
checkpoint's step; a best loss that is not finite; optimizer moments that are not finite, a
second moment below zero): the message names the file, the field and its value, instead of a
loss gone NaN steps later. A LoRA run resumes with the lora_alpha its adapters were trained
with (``train_config`` in trainer.json): under another alpha, W + (alpha / r) B A is another
model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from ..finetune import lora_layers
from .optim import OPTIMIZERS, optimizer_name, state_fields
from .state_numbers import BETA_RANGE, GROUP_RANGES, RATE_RANGE, check_number, kind, kind_words

__all__ = ["check_training_state"]

# the state tensors of a parameter's shape that the optimizers keep (optim.state_fields)
MOMENTS = (
    "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg"
)  # fmt: skip
SQUARES = ("exp_avg_sq", "max_exp_avg_sq", "square_avg")  # second moments: never below zero


def check_training_state(
    folder: Path,
    meta: Any,
    tensors: dict[str, torch.Tensor],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler,
) -> None:
    json_file, tensor_file = folder / "trainer.json", folder / "trainer.safetensors"
    if not isinstance(meta, dict):
        raise ValueError(f"{json_file}: not a JSON object")
    expected = folder.name.rsplit("-", 1)[-1]
    step = meta.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or f"{step:06d}" != expected:
        raise ValueError(f"{json_file}: step is {step!r}, but the folder is {folder.name}")
    # the parameters that train: a frozen one (finetune/) has no optimizer state
    trained = {id(p) for group in optimizer.param_groups for p in group["params"]}
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters() if id(p) in trained}
    _check_optimizer_name(json_file, meta.get("optimizer"), optimizer)
    _check_optimizer_meta(json_file, meta.get("optimizer"), optimizer, set(shapes))
    _check_tensors(tensor_file, tensors, shapes, step)
    _check_complete(tensor_file, meta["optimizer"], tensors, optimizer_name(optimizer))
    live = scheduler.state_dict()
    saved = meta.get("scheduler")
    if not isinstance(saved, dict) or set(saved) != set(live):
        raise ValueError(f"{json_file}: scheduler state has keys other than {sorted(live)}")
    for key, value in live.items():
        if kind(saved[key]) != kind(value):
            raise ValueError(
                f"{json_file}: scheduler.{key} is {saved[key]!r}; allowed {kind_words(value)}"
            )
    _check_scheduler_numbers(json_file, saved, step)
    _check_best(json_file, meta.get("best"), step)
    _check_lora_alpha(json_file, meta.get("train_config"), model)


def _check_lora_alpha(path: Path, saved: Any, model: torch.nn.Module) -> None:
    """The LoRA layers of ``model`` scale B A by the alpha the checkpoint was trained with
    (a trainer.json without train_config.lora_alpha has nothing to compare)."""
    layers = lora_layers(model)
    if not layers or not isinstance(saved, dict) or "lora_alpha" not in saved:
        return
    layer = next(iter(layers.values()))
    alpha = saved["lora_alpha"]
    if isinstance(alpha, bool) or alpha != layer.alpha:
        raise ValueError(
            f"{path}: the checkpoint's LoRA adapters were trained with lora_alpha={alpha!r} "
            f"(its train_config), this run has train.lora_alpha={layer.alpha:g}, which would "
            f"change their update (alpha / r) B A; resume with train.lora_alpha={alpha!r}, or "
            "start a new run"
        )


def _check_optimizer_name(path: Path, saved: Any, optimizer: torch.optim.Optimizer) -> None:
    """The checkpoint's optimizer is this run's (a trainer.json without optimizer.name holds
    AdamW's state)."""
    live = optimizer_name(optimizer)
    if not isinstance(saved, dict) or live is None:
        return
    name = saved.get("name", "adamw")
    if not isinstance(name, str) or name not in OPTIMIZERS:
        raise ValueError(
            f"{path}: optimizer.name is {name!r}; allowed one of {', '.join(OPTIMIZERS)}"
        )
    if name != live:
        raise ValueError(
            f"{path}: the checkpoint was trained with the optimizer {name}, this run uses "
            f"{live}; resume with train.optimizer={name}, or start a new run"
        )


def _check_optimizer_meta(
    path: Path, saved: Any, optimizer: torch.optim.Optimizer, names: set[str]
) -> None:
    groups = saved.get("param_groups") if isinstance(saved, dict) else None
    live = optimizer.param_groups
    if not isinstance(groups, list) or len(groups) != len(live):
        raise ValueError(f"{path}: optimizer.param_groups is not a list of {len(live)} groups")
    listed: list[Any] = []
    for i, (group, ours) in enumerate(zip(groups, live, strict=True)):
        if not isinstance(group, dict) or "params" not in group or not set(group) <= set(ours):
            raise ValueError(
                f"{path}: optimizer.param_groups[{i}] has keys other than {sorted(ours)}"
            )
        for key, value in group.items():
            if key != "params" and kind(value) != kind(ours[key]):
                raise ValueError(
                    f"{path}: optimizer.param_groups[{i}].{key} is {value!r}; allowed "
                    f"{kind_words(ours[key])}"
                )
            where = f"optimizer.param_groups[{i}].{key}"
            if key in GROUP_RANGES:
                check_number(path, where, value, GROUP_RANGES[key])
            elif key == "betas":
                for j, beta in enumerate(value):
                    check_number(path, f"{where}[{j}]", beta, BETA_RANGE)
        if not isinstance(group["params"], list):
            raise ValueError(f"{path}: optimizer.param_groups[{i}].params is not a list")
        listed += group["params"]
    if sorted(map(str, listed)) != sorted(names) or len(listed) != len(names):
        raise ValueError(f"{path}: the optimizer's parameters are not the model's that train")
    scalars = saved.get("scalars")
    if not isinstance(scalars, dict) or any(
        not isinstance(k, str) or k.rsplit("/", 1)[0] not in names for k in scalars
    ):
        raise ValueError(f"{path}: optimizer.scalars names parameters the model does not have")
    for key, value in scalars.items():
        if kind(value) == "number":
            check_number(path, f"optimizer.scalars[{key!r}]", value, RATE_RANGE)


def _check_scheduler_numbers(path: Path, saved: dict[str, Any], step: int) -> None:
    """The learning rates finite and >= 0; the schedule at the checkpoint's step."""
    for key in ("base_lrs", "_last_lr"):
        for i, value in enumerate(saved.get(key) or ()):
            check_number(path, f"scheduler.{key}[{i}]", value, RATE_RANGE)
    epoch = saved.get("last_epoch", step)
    if isinstance(epoch, bool) or epoch != step or not isinstance(epoch, int):
        raise ValueError(
            f"{path}: scheduler.last_epoch is {epoch!r}; allowed the checkpoint's step, {step}"
        )
    count = saved.get("_step_count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(
            f"{path}: scheduler._step_count is {count!r}; allowed a whole number >= 0"
        )


def _check_best(path: Path, best: Any, step: int) -> None:
    """None, or the step (1 to the checkpoint's) and the finite loss of the best evaluation."""
    if best is None:
        return
    if not isinstance(best, dict) or set(best) != {"step", "loss"}:
        raise ValueError(f"{path}: best is {best!r}; allowed null or {{\"step\", \"loss\"}}")
    at = best["step"]
    if isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= step:
        raise ValueError(f"{path}: best.step is {at!r}; allowed a step from 1 to {step}")
    check_number(path, "best.loss", best["loss"], (-math.inf, False, math.inf, False))


def _check_tensors(
    path: Path, tensors: dict[str, torch.Tensor], shapes: dict[str, tuple[int, ...]], step: int
) -> None:
    rng = tensors.get("rng.cpu")
    if rng is None or rng.dtype != torch.uint8 or rng.dim() != 1:
        raise ValueError(f"{path}: no CPU random-number state (rng.cpu, uint8)")
    for key, value in tensors.items():
        if key.startswith("rng."):
            continue
        param, _, field = key.removeprefix("opt/").rpartition("/")
        if not key.startswith("opt/") or param not in shapes:
            raise ValueError(
                f"{path}: {key!r} is not the state of a parameter of the model that trains"
            )
        if field not in (*MOMENTS, "step"):
            raise ValueError(
                f"{path}: {key!r} is no optimizer's state; allowed: step, {', '.join(MOMENTS)}"
            )
        want = shapes[param] if field in MOMENTS else ()
        if tuple(value.shape) != want:
            raise ValueError(
                f"{path}: {key} has shape {tuple(value.shape)}; the model needs {want}"
            )
        if not value.is_floating_point():
            raise ValueError(f"{path}: {key} has dtype {value.dtype}; allowed floating point")
        _check_values(path, key, field, value, step)


def _check_values(path: Path, key: str, field: str, value: torch.Tensor, step: int) -> None:
    """Moments finite (second moments >= 0); a step count from 0 to ``step``."""
    bad = ~torch.isfinite(value)
    if field in SQUARES or field == "step":
        bad |= value < 0
    if field == "step":
        bad |= value > step
    if bool(bad.any()):
        first = value.flatten()[bad.flatten()][0].item()
        allowed = (
            f"a count from 0 to the checkpoint's step, {step}"
            if field == "step"
            else "finite numbers >= 0"
            if field in SQUARES
            else "finite numbers"
        )
        n = int(bad.sum())
        raise ValueError(
            f"{path}: {key} holds {n} value{'s' if n > 1 else ''} like {first!r}; "
            f"allowed {allowed}"
        )


def _check_complete(
    path: Path, saved: dict[str, Any], tensors: dict[str, torch.Tensor], name: str | None
) -> None:
    """Every field that trainer.json says was saved (optimizer.fields: parameter -> names) is
    in the file or in optimizer.scalars, and nothing else; and each parameter with state holds
    the fields optimizer ``name`` keeps with its group's settings (optim.state_fields: SGD's
    momentum buffer, RMSprop's square average...). A parameter's moments left out would
    otherwise restart from zero without a word, another optimizer's be ignored."""
    fields = saved.get("fields")
    if not isinstance(fields, dict) or not all(
        isinstance(v, list) and all(isinstance(f, str) for f in v) for v in fields.values()
    ):
        raise ValueError(
            f"{path.with_suffix('.json')}: optimizer.fields is not a mapping of "
            "parameter names to lists of state names"
        )
    found = _found(saved, tensors)
    group_of = {p: g for g in saved["param_groups"] for p in g["params"]}
    for param in sorted(set(fields) | set(found)):
        want, have = set(fields.get(param, ())), found.get(param, set())
        if want - have:
            raise ValueError(
                f"{path}: the optimizer state of {param} lacks {sorted(want - have)}; the "
                "file is incomplete"
            )
        if have - want:
            raise ValueError(
                f"{path}: optimizer state {sorted(have - want)} of {param} is not listed in "
                "trainer.json"
            )
        keeps = state_fields(name, group_of[param]) if name is not None else have
        if have and have != keeps:  # none: a parameter that has had no gradient yet
            raise ValueError(
                f"{path}: the optimizer state of {param} holds {sorted(have)}; {name} with "
                f"its settings keeps {sorted(keeps)}"
            )


def _found(saved: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, set[str]]:
    """Parameter -> the names of its state in the file and in optimizer.scalars."""
    found: dict[str, set[str]] = {}
    keys = [k.removeprefix("opt/") for k in tensors if k.startswith("opt/")]
    for key in [*keys, *saved["scalars"]]:
        param, _, field = key.rpartition("/")
        found.setdefault(param, set()).add(field)
    return found
