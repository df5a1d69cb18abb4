"""The checks of a ModelConfig beyond each field's own choices and ranges (limits.py): the
rules between fields (``check_relations``: heads divide the width, ``norm="batch"`` only in an
encoder, ...), another spelling of a field (``check_names``) and the JSON types of a
config.json (``check_types``). Each refusal is a ``ValueError`` naming the fields and values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from .config_graphs import GRAPH_FIELDS, check_graph_type

__all__ = ["check_names", "check_relations", "check_types"]


def check_relations(config: Any) -> None:
    """Refuse a ModelConfig whose fields contradict each other (the module docstring)."""
    if config.d_model % config.n_head:
        raise ValueError(f"d_model={config.d_model} must be divisible by n_head={config.n_head}")
    if config.n_head % config.resolved_n_kv_head:
        raise ValueError(
            f"n_head={config.n_head} must be divisible by n_kv_head={config.n_kv_head}"
        )
    if config.attention_scores != "separate" and config.resolved_n_kv_head != config.n_head:
        raise ValueError(
            f"attention_scores={config.attention_scores!r} computes queries and keys alike "
            f"(q = k), so it needs n_kv_head = n_head ({config.n_head}), got "
            f"n_kv_head={config.n_kv_head}; grouped-query attention needs "
            "attention_scores='separate'"
        )
    if config.mlm_transform and config.activation == "swiglu":
        raise ValueError(
            "mlm_transform=True needs an element-wise activation (relu, gelu, gelu_tanh), "
            "got activation='swiglu'"
        )
    if config.norm == "batch" and config.family != "encoder":
        raise ValueError(  # notes, appendix "Layer normalization and batch normalization"
            f"norm='batch' cannot be used with family={config.family!r}: in training, "
            "BatchNorm's statistics run over every position of the batch, so a causal "
            "decoder's output at position n would depend on the tokens after n; use "
            "norm='layer' or 'rms' (family='encoder' may use norm='batch')"
        )
    if config.positional == "rotary" and config.head_dim % 2:
        raise ValueError(f"positional='rotary' needs an even head size, got {config.head_dim}")
    if config.positional_layout != "interleaved" and config.positional != "sinusoidal":
        raise ValueError(
            f"positional_layout={config.positional_layout!r} lays out the sinusoidal encoding: "
            f"it needs positional='sinusoidal', got positional={config.positional!r}"
        )
    if config.positional_layout == "split" and config.d_model % 2:
        raise ValueError(
            f"positional_layout='split' needs an even d_model (a sin half and a cos half), "
            f"got d_model={config.d_model}"
        )
    for name in ("pad_id", "decoder_start_id"):
        v = getattr(config, name)
        if v >= min(config.vocab_size, config.resolved_tgt_vocab_size):
            raise ValueError(f"{name}={v!r} must be an id in [0, vocab_size)")
    if config.share_embeddings and config.tgt_vocab_size not in (None, config.vocab_size):
        raise ValueError(
            f"share_embeddings=True needs tgt_vocab_size ({config.tgt_vocab_size}) equal to "
            f"vocab_size ({config.vocab_size}); set share_embeddings=False"
        )


def check_names(names: Iterable[str], other_names: dict[str, str]) -> None:
    """Refuse another spelling of a field (``other_names``: ModelConfig.OTHER_NAMES):
    "ff_dim is not a ModelConfig field; use d_ff"."""
    for name in names:
        if name in other_names:
            field_name = other_names[name]
            raise ValueError(f"{name} is not a ModelConfig field; use {field_name}")


def check_types(data: dict[str, Any], fields: Iterable[dataclasses.Field]) -> None:
    """JSON gives ints, floats, bools, strings: refuse e.g. a string where a size belongs
    (``fields``: ModelConfig's)."""
    for f in fields:
        if f.name not in data or data[f.name] is None:
            continue
        value, kind = data[f.name], str(f.type)
        if f.name in GRAPH_FIELDS:
            check_graph_type(f.name, value)
            continue
        if kind.startswith("bool") and not isinstance(value, bool):
            raise ValueError(f"{f.name}={value!r} must be true or false")
        if kind.startswith("str") and not isinstance(value, str):
            raise ValueError(f"{f.name}={value!r} must be a string")
        if kind.startswith("float") and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise ValueError(f"{f.name}={value!r} must be a number")
        if kind.startswith("dict") and not isinstance(value, dict):
            raise ValueError(f"{f.name}={value!r} must be an object")
