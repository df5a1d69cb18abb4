"""The optimizer's state in a checkpoint, by parameter name: its tensors as
``opt/<parameter>/<field>`` in trainer.safetensors, the rest (hyper-parameters, scalars, which
fields each parameter has) in trainer.json (state.py writes and reads both files), and state
saved under earlier module names renamed to today's (models/legacy_keys.py). State saved for a
fused ``in_proj`` ([W^Q; W^K; W^V]) is split by rows into its projections' state: every
optimizer torch offers keeps per-element state (Adam's moments, SGD's momentum, RMSprop's
squares) or a scalar (Adam's ``step``), so the split state continues exactly as the fused one.
"""

from __future__ import annotations

from typing import Any

import torch

from ..models import GlassformerModel
from ..models.legacy_keys import current_names, fused_rows

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


def current_parameter_names(
    meta: Any, tensors: dict[str, torch.Tensor], model: GlassformerModel
) -> None:
    """Rename, in place, the parameters of optimizer state saved under the earlier module names
    (models/legacy_keys.py) to today's, a fused ``in_proj``'s state split by rows into the
    model's projections (``fused_rows``); state of another shape is left to the checks."""
    optimizer = meta.get("optimizer") if isinstance(meta, dict) else None
    groups = optimizer.get("param_groups") if isinstance(optimizer, dict) else None
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups
    ):
        return
    stored = [p for g in groups for p in g["params"] if isinstance(p, str)]
    rows = {name: p.shape[0] for name, p in model.named_parameters() if p.dim()}
    names, spans = fused_rows(current_names(stored, model.family), rows)
    new: dict[str, list[str]] = {}  # stored name -> today's (several for a fused in_proj)
    for name, old in names.items():
        new.setdefault(old, []).append(name)
    if all(names == [old] for old, names in new.items()):
        return
    for group in groups:
        group["params"] = [n for p in group["params"] for n in new.get(p, [p])]

    def renamed(key: str) -> list[str]:  # "<param>/<field>"
        param, sep, field = key.rpartition("/")
        return [f"{name}{sep}{field}" for name in new.get(param, [param])]

    if isinstance(optimizer.get("fields"), dict):  # parameter -> its fields
        fields = optimizer["fields"]
        optimizer["fields"] = {n: v for k, v in fields.items() for n in new.get(k, [k])}
    if isinstance(optimizer.get("scalars"), dict):  # "<param>/<field>" -> value
        optimizer["scalars"] = {n: v for k, v in optimizer["scalars"].items() for n in renamed(k)}
    for key in [k for k in tensors if k.startswith("opt/")]:
        value = tensors.pop(key)
        for name in renamed(key[4:]):
            param = name.rpartition("/")[0]
            if param in spans and value.dim():  # its rows of the fused in_proj's state
                start, stop = spans[param]
                tensors["opt/" + name] = value[start:stop].clone()
            else:  # a scalar (Adam's step): the same for each part
                tensors["opt/" + name] = value.clone()
