"""The names of the same weights in torch.nn and in glassformer: ``torch_key_map``.

torch.nn packs [W^Q; W^K; W^V] by rows in one ``in_proj_weight``, which glassformer holds as
three Linears, ``q_proj``, ``k_proj``, ``v_proj``: converting (torch_nn.py) splits it into
three equal blocks of rows (torch.nn has no grouped-query attention) and concatenates them
back; every other tensor is copied as it is, under another name:

    torch.nn                         glassformer
    in_proj_weight / in_proj_bias    {q,k,v}_proj.weight / {q,k,v}_proj.bias  (by rows)
    out_proj.*                       out_proj.*
    self_attn                        attn
    linear1.* / linear2.*            mlp.fc1.* / mlp.fc2.*
    norm1, norm2 (encoder layer)     ln1, ln2
    norm1, norm2, norm3 (decoder)    ln1, ln2, ln3
    multihead_attn                   cross_attn
    layers.i.*, norm.*               blocks.i.*, ln_final.*
    encoder.*, decoder.*             encoder.*, decoder.*  (nn.Transformer)
"""

from __future__ import annotations

from torch import nn

__all__ = ["torch_key_map", "torch_type"]

_TORCH_TYPES = (
    nn.MultiheadAttention,
    nn.TransformerEncoderLayer,
    nn.TransformerDecoderLayer,
    nn.TransformerEncoder,
    nn.TransformerDecoder,
    nn.Transformer,
)
_MHA_KEYS = {
    "in_proj_weight": ("q_proj.weight", "k_proj.weight", "v_proj.weight"),  # rows [Q; K; V]
    "in_proj_bias": ("q_proj.bias", "k_proj.bias", "v_proj.bias"),
    "out_proj.weight": ("out_proj.weight",),
    "out_proj.bias": ("out_proj.bias",),
}
_LAYER_PARTS = {
    nn.TransformerEncoderLayer: {
        "self_attn": "attn",
        "linear1": "mlp.fc1",
        "linear2": "mlp.fc2",
        "norm1": "ln1",
        "norm2": "ln2",
    },
    nn.TransformerDecoderLayer: {
        "self_attn": "attn",
        "multihead_attn": "cross_attn",
        "linear1": "mlp.fc1",
        "linear2": "mlp.fc2",
        "norm1": "ln1",
        "norm2": "ln2",
        "norm3": "ln3",
    },
}


def torch_key_map(module: nn.Module) -> dict[str, tuple[str, ...]]:
    """torch.nn ``state_dict`` key -> the keys in ``from_torch(module).module`` whose tensors,
    stacked by rows, are that tensor: one key, or three for ``in_proj_weight`` and
    ``in_proj_bias`` ([W^Q; W^K; W^V])."""
    torch_type(module, "torch_key_map")
    return {key: _rename(module, key) for key in module.state_dict()}


def torch_type(module: nn.Module, caller: str) -> type:
    """The torch.nn class ``module`` is, of those that convert; ValueError naming ``caller``
    for any other module, and for a subclass whose ``forward`` computes something else."""
    for base in _TORCH_TYPES:
        if isinstance(module, base):
            if type(module).forward is not base.forward:
                raise ValueError(
                    f"{caller}: {type(module).__name__} overrides {base.__name__}.forward; only "
                    "modules that compute what torch.nn's classes compute can be converted"
                )
            return base
    allowed = ", ".join(t.__name__ for t in _TORCH_TYPES)
    raise ValueError(f"{caller}: cannot convert {type(module).__name__}; allowed: {allowed}")


def _rename(m: nn.Module, key: str) -> tuple[str, ...]:
    """The glassformer keys of ``m``'s state_dict key ``key`` (the table above, recursively)."""
    if isinstance(m, nn.MultiheadAttention):
        if key not in _MHA_KEYS:
            raise ValueError(f"MultiheadAttention parameter {key!r} has no glassformer equivalent")
        return _MHA_KEYS[key]
    head, _, rest = key.partition(".")
    if isinstance(m, nn.TransformerEncoderLayer | nn.TransformerDecoderLayer):
        decoder = isinstance(m, nn.TransformerDecoderLayer)
        parts = _LAYER_PARTS[nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer]
        if head not in parts:
            raise ValueError(f"{type(m).__name__} parameter {key!r} has no glassformer equivalent")
        inner = _rename(getattr(m, head), rest) if head.endswith("attn") else (rest,)
        return tuple(f"{parts[head]}.{k}" for k in inner)
    if isinstance(m, nn.TransformerEncoder | nn.TransformerDecoder) and head == "layers":
        index, _, rest = rest.partition(".")
        return tuple(f"blocks.{index}.{k}" for k in _rename(m.layers[int(index)], rest))
    if isinstance(m, nn.Transformer):
        return tuple(f"{head}.{k}" for k in _rename(getattr(m, head), rest))
    if head == "norm":  # the final norm of a stack: norm.weight, norm.bias
        return (f"ln_final.{rest}",)
    return (key,)
