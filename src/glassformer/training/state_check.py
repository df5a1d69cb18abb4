"""Checking a checkpoint's training state (trainer.json, trainer.safetensors) against the
model, optimizer and scheduler it is about to be loaded into, before anything is restored.

A file that is cut short, or that lies (a step that is not its folder's, optimizer moments
of another shape, parameters the model does not have, a scheduler of another kind, no RNG
state), is refused with a ``ValueError`` naming the file and what is wrong; nothing in it is
executed or unpickled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

__all__ = ["check_training_state"]

MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


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
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    _check_optimizer_meta(json_file, meta.get("optimizer"), optimizer, set(shapes))
    _check_tensors(tensor_file, tensors, shapes)
    _check_complete(tensor_file, meta["optimizer"], tensors)
    live = scheduler.state_dict()
    saved = meta.get("scheduler")
    if not isinstance(saved, dict) or set(saved) != set(live):
        raise ValueError(f"{json_file}: scheduler state has keys other than {sorted(live)}")
    for key, value in live.items():
        if _kind(saved[key]) != _kind(value):
            raise ValueError(f"{json_file}: scheduler {key} is {saved[key]!r}")


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
            if key != "params" and _kind(value) != _kind(ours[key]):
                raise ValueError(f"{path}: optimizer.param_groups[{i}].{key} is {value!r}")
        if not isinstance(group["params"], list):
            raise ValueError(f"{path}: optimizer.param_groups[{i}].params is not a list")
        listed += group["params"]
    if sorted(map(str, listed)) != sorted(names) or len(listed) != len(names):
        raise ValueError(f"{path}: the optimizer's parameters are not the model's")
    scalars = saved.get("scalars")
    if not isinstance(scalars, dict) or any(
        not isinstance(k, str) or k.rsplit("/", 1)[0] not in names for k in scalars
    ):
        raise ValueError(f"{path}: optimizer.scalars names parameters the model does not have")


def _check_tensors(
    path: Path, tensors: dict[str, torch.Tensor], shapes: dict[str, tuple[int, ...]]
) -> None:
    rng = tensors.get("rng.cpu")
    if rng is None or rng.dtype != torch.uint8 or rng.dim() != 1:
        raise ValueError(f"{path}: no CPU random-number state (rng.cpu, uint8)")
    for key, value in tensors.items():
        if key.startswith("rng."):
            continue
        param, _, field = key.removeprefix("opt/").rpartition("/")
        if not key.startswith("opt/") or param not in shapes:
            raise ValueError(f"{path}: {key!r} is not the state of a parameter of the model")
        want = shapes[param] if field in MOMENTS else ()
        if field not in (*MOMENTS, "step") or tuple(value.shape) != want:
            raise ValueError(
                f"{path}: {key} has shape {tuple(value.shape)}; the model needs {want}"
            )
        if not value.is_floating_point():
            raise ValueError(f"{path}: {key} has dtype {value.dtype}; allowed floating point")


def _check_complete(path: Path, saved: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Every field that trainer.json says was saved (optimizer.fields: parameter -> names) is
    in the file or in optimizer.scalars, and nothing else: a parameter's moments left out
    would otherwise restart from zero without a word."""
    fields = saved.get("fields")
    if not isinstance(fields, dict) or not all(
        isinstance(v, list) and all(isinstance(f, str) for f in v) for v in fields.values()
    ):
        raise ValueError(
            f"{path.with_suffix('.json')}: optimizer.fields is not a mapping of "
            "parameter names to lists of state names"
        )
    found: dict[str, set[str]] = {}
    keys = [k.removeprefix("opt/") for k in tensors if k.startswith("opt/")]
    for key in [*keys, *saved["scalars"]]:
        param, _, field = key.rpartition("/")
        found.setdefault(param, set()).add(field)
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


def _kind(value: Any) -> str:
    """The JSON kind a value must keep: bool, number, list (of length n), null, str, dict."""
    if isinstance(value, bool) or value is None:
        return repr(value) if value is None else "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return f"list[{len(value)}]"
    return type(value).__name__
