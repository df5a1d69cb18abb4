"""A labelled stack of tensors: the terms of the residual stream, one per label.

The residual stream is a sum ("Brief Notes on Transformers": x1 = H(x0) + x0, H(x) = Σ_j h_j(x),
x2 = MLP(x1) + x1), so it can be held as its terms stacked on a new first dimension, each with a
label: ``"embed"``, ``"pos_embed"``, ``"L1H0"`` (head 0 of layer 1), ``"L1.mlp"``, ...
(glassformer.circuits.stream lists them all).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["Components"]

_HEAD = {"self": re.compile(r"L(\d+)H(\d+)"), "cross": re.compile(r"L(\d+)XH(\d+)")}


@dataclass(eq=False)
class Components:
    """``values[i]`` is the term labelled ``labels[i]``; values (N, ...), e.g. (N, B, T, C) for
    the residual stream or (N, B) for each term's share of a logit.

    ``components["L1H0"]`` one term, ``.sum()`` the whole, ``.select(...)`` some of them,
    ``.heads()`` the attention heads' terms as a (layers, heads, ...) grid."""

    labels: list[str]
    values: Tensor

    def __post_init__(self) -> None:
        self.labels = list(self.labels)
        if len(self.labels) != self.values.shape[0]:
            raise ValueError(
                f"Components: {len(self.labels)} labels for {self.values.shape[0]} values "
                "(one label per term on the first dimension)"
            )
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"Components: the labels must differ, got {self.labels}")

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, label: object) -> bool:
        return label in self.labels

    def __getitem__(self, label: str) -> Tensor:
        return self.values[self.index(label)]

    def items(self) -> Iterator[tuple[str, Tensor]]:
        """(label, term) for each term, in order."""
        return zip(self.labels, self.values, strict=True)

    def index(self, label: str) -> int:
        """The position of ``label`` on the first dimension."""
        if label not in self.labels:
            near = difflib.get_close_matches(str(label), self.labels, n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise KeyError(f"{label!r} is not a component{hint} (.labels lists them)")
        return self.labels.index(label)

    def sum(self) -> Tensor:
        """The sum of the terms (the residual stream they decompose)."""
        return self.values.sum(0)

    def select(self, *labels: str | Callable[[str], bool]) -> Components:
        """The terms named by ``labels``, in that order, or, given one function of the
        label, those for which it says True, in their own order:
        ``select("L0H1", "L1.mlp")``, ``select(lambda label: label.startswith("L1"))``."""
        if len(labels) == 1 and callable(labels[0]):
            keep = [i for i, label in enumerate(self.labels) if labels[0](label)]
        else:
            for label in labels:
                if label not in self.labels:
                    raise ValueError(
                        f"select: {label!r} is not a component; allowed: {self.labels}"
                    )
            keep = [self.labels.index(label) for label in labels]
        return Components([self.labels[i] for i in keep], self.values[keep])

    def apply(self, fn: Callable[[Tensor], Tensor]) -> Components:
        """The same labels, values ``fn(values)`` (fn acts on the whole stack at once)."""
        return Components(self.labels, fn(self.values))

    def heads(self, kind: str = "self") -> Tensor:
        """The heads' terms as a grid (layers, heads, ...): entry [l, h] is ``"L{l}H{h}"``
        (``kind="self"``) or ``"L{l}XH{h}"`` (``kind="cross"``); zero where a head is not
        among the components."""
        if kind not in _HEAD:
            raise ValueError(f"heads: kind={kind!r}; allowed: {tuple(_HEAD)}")
        found = {}
        for i, label in enumerate(self.labels):
            m = _HEAD[kind].fullmatch(label)
            if m:
                found[int(m[1]), int(m[2])] = i
        if not found:
            raise ValueError(f"heads: no {kind}-attention head among the components {self.labels}")
        n_layer = 1 + max(layer for layer, _ in found)
        n_head = 1 + max(head for _, head in found)
        grid = self.values.new_zeros((n_layer, n_head, *self.values.shape[1:]))
        for (layer, head), i in found.items():
            grid[layer, head] = self.values[i]
        return grid

    def __repr__(self) -> str:
        shown = ", ".join(self.labels[:6]) + (", ..." if len(self.labels) > 6 else "")
        return f"Components({len(self)} terms [{shown}], values {tuple(self.values.shape)})"


def stacked(parts: list[tuple[list[str], Tensor]]) -> Components:
    """One Components from pieces (labels, values (n, ...)), in order."""
    labels = [label for names, _ in parts for label in names]
    return Components(labels, torch.cat([values for _, values in parts]))
