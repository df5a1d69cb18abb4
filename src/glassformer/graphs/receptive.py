"""The receptive field of a stack of layers: which inputs each output can depend on.

With graph G_l at layer l, the output at position i of layer l depends on the layer's inputs
at i itself (the residual connection, and the feed-forward, which acts per position) and at
every key j with an edge j -> i. After L layers the dependence is the boolean product
(I + G_L) ··· (I + G_1): a GNN's L-hop neighbourhood (Formal Algorithms for Transformers,
"Transformers as GNNs").
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from .graph import AttentionGraph
from .patterns import full

__all__ = ["receptive_field", "receptive_fields"]


def receptive_fields(graphs: Sequence[AttentionGraph | None], t: int) -> list[Tensor]:
    """(T, T) bool per layer l = 1..L: entry [i, j] True when the output of layer l at
    position i can depend on the input at position j (None = full attention)."""
    eye = torch.eye(t, dtype=torch.bool)
    field, out = eye, []
    for g in graphs:
        step = (full() if g is None else g).mask(t) | eye  # (T, T): one layer's dependence
        field = (step.float() @ field.float()) > 0  # composition of dependences
        out.append(field)
    return out


def receptive_field(graphs: Sequence[AttentionGraph | None], t: int) -> Tensor:
    """(T, T) bool: which inputs each output of the whole stack can depend on."""
    return receptive_fields(graphs, t)[-1] if graphs else torch.eye(t, dtype=torch.bool)
