"""Convert between torch.nn's transformer modules and glassformer's.

    from_torch(nn.TransformerEncoderLayer(...))  -> TorchStyleEncoderLayer(EncoderBlock)
    to_torch(EncoderBlock(...) or its adapter)   -> nn.TransformerEncoderLayer

Weights are copied by name: ``torch_key_map`` (torch_keys.py) gives each torch.nn key its
glassformer keys; torch's ``in_proj_weight`` and ``in_proj_bias`` are split by rows into
``q_proj``, ``k_proj``, ``v_proj`` and concatenated back; no tensor is otherwise reshaped.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from ..nn.blocks import DecoderBlock, EncoderBlock
from ..nn.multihead import MultiHeadAttention
from ..nn.norms import LayerNorm
from ..nn.transformer import Decoder, Encoder
from .torch_adapters import (
    TorchStyle,
    TorchStyleDecoderLayer,
    TorchStyleEncoderLayer,
    TorchStyleMultiheadAttention,
)
from .torch_config import (
    layer_from_torch,
    layer_to_torch,
    mha_from_torch,
    mha_to_torch,
    stack_from_torch,
    stack_to_torch,
)
from .torch_keys import torch_key_map, torch_type
from .torch_stacks import TorchStyleDecoder, TorchStyleEncoder, TorchStyleTransformer

__all__ = ["from_torch", "to_torch", "torch_key_map"]

def from_torch(module: nn.Module) -> nn.Module:
    """The glassformer equivalent of a torch.nn transformer module, with a copy of its weights.

    Accepts ``MultiheadAttention``, ``TransformerEncoderLayer``, ``TransformerDecoderLayer``,
    ``TransformerEncoder``, ``TransformerDecoder`` and ``Transformer``. Returns an adapter
    (``TorchStyle*``) that takes the same call arguments as ``module`` (torch.nn's masks,
    ``is_causal`` hints, ``batch_first`` layout) and holds the native glassformer module as
    ``.module``. Raises ValueError naming any attribute glassformer cannot express.
    """
    kind = torch_type(module, "from_torch")
    name = type(module).__name__
    if kind is nn.MultiheadAttention:
        native = MultiHeadAttention(**mha_from_torch(module, name))
        adapter = TorchStyleMultiheadAttention(native, module.batch_first)
    elif kind is nn.TransformerEncoderLayer:
        options, batch_first = layer_from_torch(module, name)
        adapter = TorchStyleEncoderLayer(EncoderBlock(**options), batch_first)
    elif kind is nn.TransformerDecoderLayer:
        options, batch_first = layer_from_torch(module, name)
        adapter = TorchStyleDecoderLayer(DecoderBlock(**options), batch_first)
    elif kind is nn.TransformerEncoder:
        native, batch_first = _stack(module, name, nn.TransformerEncoderLayer, Encoder)
        flags = dict(enable_nested_tensor=module.enable_nested_tensor, mask_check=module.mask_check)
        adapter = TorchStyleEncoder(native, batch_first, **flags)
    elif kind is nn.TransformerDecoder:
        native, batch_first = _stack(module, name, nn.TransformerDecoderLayer, Decoder)
        adapter = TorchStyleDecoder(native, batch_first)
    else:
        adapter = _transformer_from_torch(module, name)
    _copy_from_torch(module, adapter.module)
    return adapter.train(module.training)


def to_torch(module: nn.Module, *, batch_first: bool | None = None) -> nn.Module:
    """The torch.nn equivalent of a glassformer module or adapter, with a copy of its weights.

    Accepts ``MultiHeadAttention``, ``EncoderBlock``, ``DecoderBlock`` (with cross-attention),
    ``Encoder``, ``Decoder`` and every ``TorchStyle*`` adapter. ``batch_first`` defaults to the
    adapter's, and to True (glassformer's layout) for native modules. torch.nn can express
    LayerNorm only, activation relu / gelu, n_kv_head == n_head, one dropout rate and the same
    bias flag everywhere; anything else raises ValueError naming the attribute.
    """
    native, default_first, flags = _unwrap(module)
    batch_first = default_first if batch_first is None else bool(batch_first)
    where = type(module).__name__ + (".module" if native is not module else "")
    for block in native.modules():  # torch.nn's layers attend to every key
        graph = getattr(block, "graph", None) or getattr(block, "cross_graph", None)
        if graph is not None:
            raise ValueError(
                f"{where}: a block attends along the graph {graph.spec!r}; torch.nn has no "
                "attention graphs (give the torch.nn module the graph's mask, graph.mask(T))"
            )
    param = next(native.parameters(), None)
    factory = {} if param is None else dict(device=param.device, dtype=param.dtype)
    with warnings.catch_warnings():  # torch warns when norm_first etc. rule out nested tensors
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        out = _build_torch(native, where, batch_first, flags, factory)
    key_map = torch_key_map(out)
    state = native.state_dict()
    unused = sorted(set(state) - {k for keys in key_map.values() for k in keys})
    if unused:
        raise ValueError(f"{where}: torch.nn has no place for the parameters {unused}")
    out.load_state_dict({key: torch.cat([state[k] for k in keys]) for key, keys in key_map.items()})
    return out.train(module.training)


def _stack(module, where, layer_type, native_type):
    options, batch_first, final = stack_from_torch(module, where, layer_type)
    native = native_type(len(module.layers), final_norm=final is not None, **options)
    if final is not None:  # the final norm may have its own eps and bias
        native.ln_final = LayerNorm(options["d_model"], eps=final[0], bias=final[1])
    return native, batch_first


def _transformer_from_torch(module: nn.Transformer, where: str) -> TorchStyleTransformer:
    for part, kind in (("encoder", nn.TransformerEncoder), ("decoder", nn.TransformerDecoder)):
        if type(getattr(module, part)) is not kind:
            raise ValueError(
                f"{where}.{part} is {type(getattr(module, part)).__name__}; glassformer converts "
                f"a custom_{part} only if it is a {kind.__name__}"
            )
    enc = module.encoder
    encoder, enc_first = _stack(enc, f"{where}.encoder", nn.TransformerEncoderLayer, Encoder)
    decoder, dec_first = _stack(
        module.decoder, f"{where}.decoder", nn.TransformerDecoderLayer, Decoder
    )
    if not module.batch_first == enc_first == dec_first:
        raise ValueError(
            f"{where}: batch_first={module.batch_first} but its encoder layers have "
            f"batch_first={enc_first} and decoder layers batch_first={dec_first}; they must agree"
        )
    flags = dict(enable_nested_tensor=enc.enable_nested_tensor, mask_check=enc.mask_check)
    return TorchStyleTransformer(encoder, decoder, module.batch_first, **flags)


def _copy_from_torch(source: nn.Module, native: nn.Module) -> None:
    param = next(source.parameters(), None)
    if param is not None:
        native.to(device=param.device, dtype=param.dtype)
    key_map = torch_key_map(source)
    state = {}  # torch's in_proj_weight, in_proj_bias: three equal blocks of rows
    for key, value in source.state_dict().items():
        state.update(zip(key_map[key], value.chunk(len(key_map[key])), strict=True))
    native.load_state_dict(state)
    params = dict(native.named_parameters())
    for key, p in source.named_parameters():
        for native_key in key_map[key]:
            params[native_key].requires_grad_(p.requires_grad)


def _unwrap(module: nn.Module) -> tuple[nn.Module, bool, dict]:
    """(native module, default batch_first, TransformerEncoder flags)."""
    if isinstance(module, TorchStyle):
        flags = {
            k: getattr(module, k)
            for k in ("enable_nested_tensor", "mask_check")
            if hasattr(module, k)
        }
        return module.module, module.batch_first, flags
    if isinstance(module, MultiHeadAttention | EncoderBlock | DecoderBlock | Encoder | Decoder):
        return module, True, {}
    allowed = (
        "MultiHeadAttention, EncoderBlock, DecoderBlock, Encoder, Decoder, TorchStyle* adapters"
    )
    raise ValueError(f"to_torch: cannot convert {type(module).__name__}; allowed: {allowed}")


def _needs_cross_attention(native: DecoderBlock | Decoder, where: str) -> None:
    missing = (
        native.cross_attn is None
        if isinstance(native, DecoderBlock)
        else not native.cross_attention
    )
    if missing:
        raise ValueError(
            f"{where}: cross_attention=False; torch.nn's decoder layers always cross-attend to a "
            "memory. A decoder-only (GPT) layer has the state_dict of an EncoderBlock: load it "
            "into an EncoderBlock / Encoder, convert that, and call the torch.nn encoder with a "
            "causal mask (is_causal=True)"
        )


def _build_torch(native, where, batch_first, flags, factory) -> nn.Module:
    common = dict(batch_first=batch_first, **factory)
    if isinstance(native, MultiHeadAttention):
        return nn.MultiheadAttention(**mha_to_torch(native, where), **common)
    if isinstance(native, EncoderBlock):
        return nn.TransformerEncoderLayer(**layer_to_torch(native, where), **common)
    if isinstance(native, DecoderBlock):
        _needs_cross_attention(native, where)
        return nn.TransformerDecoderLayer(**layer_to_torch(native, where), **common)
    if isinstance(native, Encoder | Decoder):
        if isinstance(native, Decoder):
            _needs_cross_attention(native, where)
        kwargs, final = stack_to_torch(native, where)
        norm = None
        if final is not None:
            norm = nn.LayerNorm(kwargs["d_model"], final[0], bias=final[1], **factory)
        if isinstance(native, Encoder):
            layer = nn.TransformerEncoderLayer(**kwargs, **common)
            return nn.TransformerEncoder(layer, len(native.blocks), norm, **flags)
        layer = nn.TransformerDecoderLayer(**kwargs, **common)
        return nn.TransformerDecoder(layer, len(native.blocks), norm)
    return _transformer_to_torch(native, where, flags, common)


def _transformer_to_torch(native: nn.ModuleDict, where, flags, common) -> nn.Transformer:
    """``native`` is TorchStyleTransformer.module: {"encoder": Encoder, "decoder": Decoder}."""
    encoder, decoder = native["encoder"], native["decoder"]
    _needs_cross_attention(decoder, f"{where}.decoder")
    enc, enc_final = stack_to_torch(encoder, f"{where}.encoder")
    dec, dec_final = stack_to_torch(decoder, f"{where}.decoder")
    if enc != dec:
        diff = {k: (v, dec[k]) for k, v in enc.items() if dec[k] != v}
        raise ValueError(
            f"{where}: encoder and decoder layers differ in {diff} (encoder, decoder); "
            "torch.nn.Transformer uses one set of options for both"
        )
    for part, final in (("encoder", enc_final), ("decoder", dec_final)):
        if final is None:
            raise ValueError(
                f"{where}.{part}.ln_final is None; torch.nn.Transformer always has a final "
                f"LayerNorm after its {part}, so it needs final_norm=True"
            )
        if final != (enc["layer_norm_eps"], enc["bias"]):
            raise ValueError(
                f"{where}.{part}.ln_final has eps={final[0]}, bias={final[1]}; "
                "torch.nn.Transformer's final LayerNorm has the layers' "
                f"eps={enc['layer_norm_eps']} and bias={enc['bias']}"
            )
    out = nn.Transformer(
        num_encoder_layers=len(encoder.blocks),
        num_decoder_layers=len(decoder.blocks),
        **enc,
        **common,
    )
    if not flags.get("enable_nested_tensor", True):
        out.encoder.enable_nested_tensor = out.encoder.use_nested_tensor = False
    out.encoder.mask_check = flags.get("mask_check", True)
    return out
