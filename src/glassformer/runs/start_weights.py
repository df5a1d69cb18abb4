"""The weights a new run starts with when it starts from a pre-trained model (pretrained.py
reads and checks it): copied into the run's model by name, a tied matrix once, a head the task
adds left as initialised; ``StartReport`` says what was copied, what is new and what was left
out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from ..models.config import ModelConfig
from .errors import RunError

__all__ = ["Pretrained", "StartReport"]


@dataclass
class StartReport:
    """What a run started from PATH took from it: ``loaded`` parameters (a tied matrix once),
    the ``new`` parts ("classifier 384 -> 2") and the checkpoint's parts ``left_out``."""

    source: str
    loaded: int = 0
    new: list[str] = dataclasses.field(default_factory=list)
    left_out: list[str] = dataclasses.field(default_factory=list)


@dataclass
class Pretrained:
    """A pre-trained model read for a task: the model as read, its tokenizer, and the class
    and config of the model the run trains."""

    path: str
    model: Any
    tokenizer: Any
    architecture: type
    config: ModelConfig

    def copy_into(self, model: torch.nn.Module) -> StartReport:
        """Copy the weights of the pre-trained model into ``model`` (built from ``config``)
        by name; what ``model`` has and the checkpoint lacks stays as initialised."""
        source = _unique(self.model)
        report = StartReport(self.path)
        keep_classifier = (
            self.model.config.extra.get("labels") == self.config.extra.get("labels")
            and self.model.config.n_classes == self.config.n_classes
        )
        used = set()
        with torch.no_grad():
            for name, tensor in _unique(model).items():
                got = source.get(name)
                head = name.split(".")[0] == "classifier"
                if got is None or (head and not keep_classifier):
                    continue
                if got.shape != tensor.shape:  # the configs agree but for the head
                    raise RunError(
                        f"init_from {self.path}: tensor {name!r} has shape "
                        f"{tuple(got.shape)}, the run's model needs {tuple(tensor.shape)}",
                        argument="init_from",
                    )
                tensor.copy_(got)
                used.add(name)
                report.loaded += tensor.numel()
        report.new = _parts(model, [n for n in _unique(model) if n not in used])
        had = dict(self.model.named_children())
        for name, child in model.named_children():  # a new head that shares a loaded matrix
            shared = next(child.parameters(), None) is not None and name not in had
            if shared and not any(part.split()[0] == name for part in report.new):
                report.new.append(f"{name} (sharing the loaded token embedding)")
        report.left_out = _parts(self.model, [n for n in source if n not in used])
        return report


def _unique(model) -> dict[str, torch.Tensor]:
    """The model's tensors by name, a tied one under its first name only."""
    seen, out = set(), {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out[name] = tensor.detach()
    return out


def _parts(model, names: list[str]) -> list[str]:
    """Module names of ``names`` (e.g. "classifier 384 -> 2", "unembed"), in order."""
    shown: dict[str, str] = {}
    modules = dict(model.named_modules())
    for name in names:
        prefix = name.rsplit(".", 1)[0]
        module = modules.get(prefix)
        top = prefix.split(".")[0]
        linear = isinstance(module, torch.nn.Linear)
        if linear and (top == prefix or prefix == f"{top}.proj"):  # a head: its sizes
            shown.setdefault(top, f"{top} {module.in_features} -> {module.out_features}")
        else:
            shown.setdefault(top, top)
    return list(shown.values())
