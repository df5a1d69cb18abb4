"""The optimizer's state in a checkpoint, by parameter name: its tensors as
``opt/<parameter>/<field>`` in trainer.safetensors, the rest (hyper-parameters, scalars, which
fields each parameter has) in trainer.json (state.py writes and reads both files), and state
saved under earlier module names renamed to today's (models/legacy_keys.py).
"""

from __future__ import annotations

from typing import Any

import torch

from ..models import GlassformerModel
from ..models.legacy_keys import current_names

__all__ = [
    "current_parameter_names",
    "load_param_groups",
    "optimizer_state",
    "optimizer_tensors",
]


def optimizer_tensors(optim_sd) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Optimizer state keyed by parameter name -> ("opt/<name>/<field>" tensors, the rest)."""
    tensors, scalars, fields = {}, {}, {}
    for param, entry in optim_sd["state"].items():
        fields[param] = sorted(entry)  # what a reader must find, so an omission is caught
        for field, value in entry.items():
            if torch.is_tensor(value):
                tensors[f"opt/{param}/{field}"] = value.detach().contiguous().cpu()
            else:
                scalars[f"{param}/{field}"] = value
    meta = {"param_groups": optim_sd["param_groups"], "scalars": scalars, "fields": fields}
    return tensors, meta


def optimizer_state(meta: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The optimizer's state dict from trainer.json's ``meta`` and the "opt/" ``tensors``."""
    state: dict[str, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("opt/"):
            param, field = key[4:].rsplit("/", 1)
            state.setdefault(param, {})[field] = value
    for key, value in meta["scalars"].items():
        param, field = key.rsplit("/", 1)
        state.setdefault(param, {})[field] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def load_param_groups(
    model: GlassformerModel, optimizer: torch.optim.Optimizer, groups: list[dict[str, Any]]
) -> None:
    """The hyper-parameters of the saved ``groups`` (parameters by name) into ``optimizer``,
    which keeps no per-parameter state; each group must hold the same parameters."""
    names = {id(p): name for name, p in model.named_parameters()}
    loaded, start = [], 0
    for i, (saved, live) in enumerate(zip(groups, optimizer.param_groups, strict=True)):
        if sorted(saved["params"]) != sorted(names[id(p)] for p in live["params"]):
            raise ValueError(f"param_groups[{i}] holds other parameters than this run's")
        count = len(live["params"])
        loaded.append({**saved, "params": list(range(start, start + count))})
        start += count
    optimizer.load_state_dict({"state": {}, "param_groups": loaded})


def current_parameter_names(meta: Any, tensors: dict[str, torch.Tensor], family: str) -> None:
    """Rename, in place, the parameters of optimizer state saved under the earlier module names
    (models/legacy_keys.py) to today's; state of another shape is left to the checks."""
    optimizer = meta.get("optimizer") if isinstance(meta, dict) else None
    groups = optimizer.get("param_groups") if isinstance(optimizer, dict) else None
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups
    ):
        return
    stored = [p for g in groups for p in g["params"] if isinstance(p, str)]
    new = {old: name for name, old in current_names(stored, family).items() if name != old}
    if not new:
        return
    for group in groups:
        group["params"] = [new.get(p, p) if isinstance(p, str) else p for p in group["params"]]

    def renamed(key: str) -> str:  # "<param>/<field>"
        param, sep, field = key.rpartition("/")
        return f"{new.get(param, param)}{sep}{field}"

    if isinstance(optimizer.get("fields"), dict):  # parameter -> its fields
        optimizer["fields"] = {new.get(k, k): v for k, v in optimizer["fields"].items()}
    if isinstance(optimizer.get("scalars"), dict):  # "<param>/<field>" -> value
        optimizer["scalars"] = {renamed(k): v for k, v in optimizer["scalars"].items()}
    for key in [k for k in tensors if k.startswith("opt/")]:
        tensors["opt/" + renamed(key[4:])] = tensors.pop(key)
