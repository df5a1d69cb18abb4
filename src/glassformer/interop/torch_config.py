"""Read a module's hyper-parameters for the other library, and refuse what does not map.

``*_from_torch`` read a torch.nn module and return glassformer constructor options;
``*_to_torch`` read a glassformer module and return torch.nn constructor arguments. Each raises
a ValueError naming the attribute, its value, and what the other library would need.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.blocks import DecoderBlock, EncoderBlock
from ..nn.multihead import MultiHeadAttention
from ..nn.norms import LayerNorm

__all__ = [
    "layer_from_torch",
    "layer_to_torch",
    "mha_from_torch",
    "mha_to_torch",
    "norm_from_torch",
    "norm_to_torch",
    "stack_from_torch",
    "stack_to_torch",
]


def _same(where: str, what: str, values: dict[str, object], need: str) -> object:
    """The one value shared by ``values`` (attribute -> value), else a ValueError."""
    distinct = set(values.values())
    if len(distinct) != 1:
        found = ", ".join(f"{where}.{k}={v!r}" for k, v in values.items())
        raise ValueError(f"{what} differ ({found}); {need}")
    return distinct.pop()


# ----------------------------------------------------------------------------- torch -> glassformer


def mha_from_torch(m: nn.MultiheadAttention, where: str) -> dict:
    """Options of glassformer ``MultiHeadAttention`` for a torch ``MultiheadAttention``."""
    if not m._qkv_same_embed_dim:
        raise ValueError(
            f"{where}: kdim={m.kdim}, vdim={m.vdim} with embed_dim={m.embed_dim}; glassformer's "
            "MultiHeadAttention projects keys and values from d_model features, so it needs "
            "kdim == vdim == embed_dim"
        )
    if m.bias_k is not None or m.bias_v is not None:
        raise ValueError(
            f"{where}: add_bias_kv=True (bias_k, bias_v) has no glassformer equivalent; it needs "
            "add_bias_kv=False"
        )
    if m.add_zero_attn:
        raise ValueError(
            f"{where}: add_zero_attn=True has no glassformer equivalent; it needs "
            "add_zero_attn=False"
        )
    bias = _same(
        where,
        "biases",
        {"in_proj_bias": m.in_proj_bias is not None, "out_proj.bias": m.out_proj.bias is not None},
        "glassformer's MultiHeadAttention has biases on both projections or on neither",
    )
    return dict(d_model=m.embed_dim, n_head=m.num_heads, dropout=float(m.dropout), bias=bias)


def norm_from_torch(norm: nn.Module, where: str, d_model: int) -> tuple[float, bool]:
    """(eps, bias) of a torch ``LayerNorm`` over the last d_model features."""
    if type(norm) is not nn.LayerNorm:
        raise ValueError(
            f"{where} is {type(norm).__name__}; glassformer converts torch.nn.LayerNorm only, so "
            "it needs nn.LayerNorm"
        )
    if tuple(norm.normalized_shape) != (d_model,) or norm.weight is None:
        raise ValueError(
            f"{where}: normalized_shape={tuple(norm.normalized_shape)}, elementwise_affine="
            f"{norm.weight is not None}; glassformer's LayerNorm needs "
            f"normalized_shape=({d_model},) and elementwise_affine=True"
        )
    return float(norm.eps), norm.bias is not None


def _activation_from_torch(act: object, where: str) -> str:
    if act is F.relu or act is torch.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    if isinstance(act, nn.GELU) and act.approximate == "tanh":
        return "gelu_tanh"
    raise ValueError(
        f"{where}.activation={act!r} has no glassformer equivalent; allowed: 'relu' / F.relu / "
        "nn.ReLU(), 'gelu' / F.gelu / nn.GELU(), nn.GELU(approximate='tanh')"
    )


def layer_from_torch(layer: nn.Module, where: str) -> tuple[dict, bool]:
    """(EncoderBlock / DecoderBlock options, batch_first) of a torch transformer layer."""
    decoder = isinstance(layer, nn.TransformerDecoderLayer)
    attn_names = ("self_attn", "multihead_attn") if decoder else ("self_attn",)
    attns = {n: mha_from_torch(getattr(layer, n), f"{where}.{n}") for n in attn_names}
    for key in ("d_model", "n_head", "dropout", "bias"):
        _same(
            where,
            f"attention {key}",
            {f"{n}.{key}": a[key] for n, a in attns.items()},
            "glassformer blocks use the same for self- and cross-attention",
        )
    batch_first = _same(
        where,
        "batch_first flags",
        {f"{n}.batch_first": getattr(layer, n).batch_first for n in attn_names},
        "both attentions must agree",
    )
    d_model = attns["self_attn"]["d_model"]
    norm_names = ("norm1", "norm2", "norm3") if decoder else ("norm1", "norm2")
    norms = {n: norm_from_torch(getattr(layer, n), f"{where}.{n}", d_model) for n in norm_names}
    eps = _same(
        where,
        "layer_norm_eps values",
        {f"{n}.eps": e for n, (e, _) in norms.items()},
        "glassformer blocks use one layer_norm_eps",
    )
    drop_names = ("dropout", "dropout1", "dropout2", "dropout3")[: 4 if decoder else 3]
    dropout = _same(
        where,
        "dropout rates",
        {f"{n}.p": float(getattr(layer, n).p) for n in drop_names},
        "converted as one rate for the sub-layer outputs and the feed-forward's hidden layer "
        "(dropout, ff_dropout=None)",
    )
    if layer.linear1.in_features != d_model or layer.linear2.out_features != d_model:
        raise ValueError(
            f"{where}: linear1.in_features={layer.linear1.in_features}, linear2.out_features="
            f"{layer.linear2.out_features}; both must equal d_model={d_model}"
        )
    biases = {f"{n}.bias": b for n, (_, b) in norms.items()}
    biases.update({f"{n}.bias": getattr(layer, n).bias is not None for n in ("linear1", "linear2")})
    biases["self_attn.in_proj_bias"] = attns["self_attn"]["bias"]
    bias = _same(where, "biases", biases, "glassformer blocks have all biases or none (bias=)")
    options = dict(
        d_model=d_model,
        n_head=attns["self_attn"]["n_head"],
        d_ff=layer.linear1.out_features,
        activation=_activation_from_torch(layer.activation, where),
        norm="layer",
        norm_first=bool(layer.norm_first),
        dropout=dropout,
        attn_dropout=attns["self_attn"]["dropout"],
        bias=bias,
        eps=eps,
    )
    return options, batch_first


def stack_from_torch(
    stack: nn.Module, where: str, layer_type: type
) -> tuple[dict, bool, tuple[float, bool] | None]:
    """(block options, batch_first, (eps, bias) of the final norm or None) of a torch stack."""
    if len(stack.layers) == 0:
        raise ValueError(f"{where}.layers is empty; glassformer converts stacks of >= 1 layer")
    found = []
    for i, layer in enumerate(stack.layers):
        if type(layer) is not layer_type:
            raise ValueError(
                f"{where}.layers.{i} is {type(layer).__name__}; glassformer converts "
                f"{layer_type.__name__} layers only"
            )
        found.append(layer_from_torch(layer, f"{where}.layers.{i}"))
    for i, got in enumerate(found[1:], start=1):
        if got != found[0]:
            diff = {k: (found[0][0][k], v) for k, v in got[0].items() if found[0][0][k] != v}
            raise ValueError(
                f"{where}.layers.{i} differs from {where}.layers.0 in {diff or 'batch_first'}; "
                "glassformer stacks use the same options for every layer"
            )
    options, batch_first = found[0]
    norm = stack.norm
    final = None if norm is None else norm_from_torch(norm, f"{where}.norm", options["d_model"])
    return options, batch_first, final


# ----------------------------------------------------------------------------- glassformer -> torch


_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


def mha_to_torch(m: MultiHeadAttention, where: str) -> dict:
    """torch ``MultiheadAttention`` arguments for a glassformer ``MultiHeadAttention``."""
    if m.scores != "separate":
        raise ValueError(
            f"{where}.attention_scores={m.scores!r}: torch.nn.MultiheadAttention has separate "
            "query and key projections; it needs attention_scores='separate'"
        )
    if m.n_kv_head != m.n_head:
        raise ValueError(
            f"{where}.n_kv_head={m.n_kv_head} with n_head={m.n_head}: torch.nn.MultiheadAttention"
            " has no grouped-query attention; it needs n_kv_head == n_head"
        )
    bias = _same(
        where,
        "biases",
        {f"{p}.bias": getattr(m, p).bias is not None for p in _PROJECTIONS},
        "torch.nn.MultiheadAttention has biases on both projections or on neither (bias=)",
    )
    d_model = m.out_proj.out_features
    return dict(embed_dim=d_model, num_heads=m.n_head, dropout=float(m.dropout), bias=bias)


def norm_to_torch(norm: nn.Module, where: str) -> tuple[float, bool]:
    """(eps, bias) of a glassformer LayerNorm."""
    if type(norm) is not LayerNorm:
        raise ValueError(
            f"{where} is {type(norm).__name__}; torch.nn's transformer layers only have LayerNorm,"
            " so it needs norm='layer'"
        )
    return float(norm.eps), norm.bias is not None


def layer_to_torch(block: EncoderBlock | DecoderBlock, where: str) -> dict:
    """torch ``TransformerEncoderLayer`` / ``TransformerDecoderLayer`` arguments of a block."""
    attn_names = ("attn", "cross_attn") if block.cross_attn is not None else ("attn",)
    attns = {n: mha_to_torch(getattr(block, n), f"{where}.{n}") for n in attn_names}
    norm_names = ("ln1", "ln2", "ln3") if len(attn_names) == 2 else ("ln1", "ln2")
    norms = {n: norm_to_torch(getattr(block, n), f"{where}.{n}") for n in norm_names}
    eps = _same(
        where,
        "norm eps values",
        {f"{n}.eps": e for n, (e, _) in norms.items()},
        "torch.nn layers use one layer_norm_eps",
    )
    activation = block.mlp.activation
    if activation not in ("relu", "gelu"):
        why = {
            "swiglu": "torch.nn's feed-forward has no gate",
            "gelu_tanh": "torch.nn's eval fast path computes any nn.GELU as the exact (erf) gelu",
        }.get(activation, "")
        raise ValueError(
            f"{where}.mlp.activation={activation!r}: torch.nn's transformer layers take 'relu' or "
            f"'gelu' ({why}); it needs activation='relu' or 'gelu'"
        )
    rates = {"dropout.p": float(block.dropout.p), "mlp.dropout.p": float(block.mlp.dropout.p)}
    rates.update({f"{n}.dropout": a["dropout"] for n, a in attns.items()})
    dropout = _same(
        where,
        "dropout rates",
        rates,
        "torch.nn layers use one rate (attn_dropout=None, ff_dropout=None)",
    )
    biases = {f"{n}.bias": a["bias"] for n, a in attns.items()}
    biases.update({f"{n}.bias": b for n, (_, b) in norms.items()})
    biases.update({f"mlp.{n}.bias": getattr(block.mlp, n).bias is not None for n in ("fc1", "fc2")})
    bias = _same(where, "biases", biases, "torch.nn layers have all biases or none (bias=)")
    return dict(
        d_model=attns["attn"]["embed_dim"],
        nhead=attns["attn"]["num_heads"],
        dim_feedforward=block.mlp.fc2.in_features,
        dropout=dropout,
        activation=activation,
        layer_norm_eps=eps,
        norm_first=bool(block.norm_first),
        bias=bias,
    )


def stack_to_torch(stack: nn.Module, where: str) -> tuple[dict, tuple[float, bool] | None]:
    """(layer arguments, (eps, bias) of the final norm or None) of an Encoder / Decoder."""
    if len(stack.blocks) == 0:
        raise ValueError(f"{where}.blocks is empty; torch.nn stacks need at least one layer")
    found = [layer_to_torch(layer, f"{where}.blocks.{i}") for i, layer in enumerate(stack.blocks)]
    for i, got in enumerate(found[1:], start=1):
        if got != found[0]:
            diff = {k: (found[0][k], v) for k, v in got.items() if found[0][k] != v}
            raise ValueError(
                f"{where}.blocks.{i} differs from {where}.blocks.0 in {diff}; torch.nn stacks "
                "clone one layer, so every layer needs the same options"
            )
    final = None if stack.ln_final is None else norm_to_torch(stack.ln_final, f"{where}.ln_final")
    return found[0], final
