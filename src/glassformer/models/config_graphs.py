"""ModelConfig's attention-graph fields: which stack each describes, and their checks.

``attention_graph`` is the self-attention of the encoder (encoder, encoder-decoder) or of the
decoder (decoder); ``decoder_attention_graph`` and ``cross_attention_graph`` the decoder's self-
and cross-attention of an encoder-decoder. Each holds a spec of ``glassformer.graphs`` (one
graph for every layer or one per layer) and stays JSON: an AttentionGraph given to the config
is kept as its spec.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from ..graphs import AttentionGraph
from ..graphs import layer_graphs as parse_layer_graphs

__all__ = ["FAMILIES", "GRAPH_FIELDS", "as_spec", "check_graph_type", "layer_graphs"]

FAMILIES = ("decoder", "encoder", "encoder-decoder")
# The attention-graph fields, and the families that have the attention each one describes.
GRAPH_FIELDS = {
    "attention_graph": FAMILIES,
    "decoder_attention_graph": ("encoder-decoder",),
    "cross_attention_graph": ("encoder-decoder",),
}
_NOT_FOR = {
    "decoder_attention_graph": "(its decoder's self-attention); the self-attention graph of "
    "family={!r} is attention_graph",
    "cross_attention_graph": "(its cross-attention); family={!r} has no cross-attention",
}


class Stacks(Protocol):
    """What ``layer_graphs`` reads of a ModelConfig: the family, the layer counts and the
    graph fields (read by name)."""

    family: str
    n_layer: int

    @property
    def resolved_n_decoder_layer(self) -> int: ...


def layer_graphs(config: Stacks, name: str) -> list[AttentionGraph | None]:
    """The graph of each layer of the stack that field ``name`` describes (see
    ``ModelConfig.layer_graphs``); [] when the family has no such stack."""
    if name not in GRAPH_FIELDS:
        raise ValueError(f"layer_graphs: {name!r} is not one of {tuple(GRAPH_FIELDS)}")
    spec = getattr(config, name)
    check_graph_type(name, spec)
    if config.family not in GRAPH_FIELDS[name]:
        if spec is not None:
            raise ValueError(
                f"{name}={spec!r} is for family='encoder-decoder' "
                + _NOT_FOR[name].format(config.family)
            )
        return []
    n = config.n_layer if name == "attention_graph" else config.resolved_n_decoder_layer
    try:
        with torch.device("cpu"):  # rules on positions, also when a model is built on meta
            return parse_layer_graphs(spec, n, what=name)
    except (TypeError, RuntimeError) as err:  # e.g. an edge list that is not a tensor
        raise ValueError(f"{name}: {err}") from None


def as_spec(value: Any) -> Any:
    """A graph field with each AttentionGraph given as its spec (text or an object), so that
    the config stays JSON."""
    if isinstance(value, AttentionGraph):
        return value.spec
    if isinstance(value, list | tuple):
        return [as_spec(v) for v in value]
    return value


def check_graph_type(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, str | list | dict):
        raise ValueError(
            f"{name}={value!r} must be an attention graph spec (glassformer.graphs.parse): "
            "text, a list with one spec per layer, or an object"
        )
