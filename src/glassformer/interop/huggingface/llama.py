"""Llama: ``transformers.LlamaForCausalLM`` <-> ``glassformer.models.DecoderLM``.

Pre-norm decoder with RMSNorm, rotary positions (``rope_theta`` -> ``rope_base``), a SwiGLU
feed-forward (``silu(x W_gate) ⊙ (x W_up)``), grouped-query attention
(``num_key_value_heads`` -> ``n_kv_head``), no biases, a final norm, and an unembedding that is
untied unless ``tie_word_embeddings``. Plain RoPE only (no ``rope_scaling``).

    Hugging Face (LlamaForCausalLM)                      glassformer (DecoderLM)
    model.embed_tokens.weight                            embed.weight
    model.layers.i.input_layernorm.weight                blocks.i.ln1.weight
    model.layers.i.self_attn.{q,k,v}_proj.weight         blocks.i.attn.{q,k,v}_proj.weight
    model.layers.i.self_attn.o_proj.weight               blocks.i.attn.out_proj.weight
    model.layers.i.post_attention_layernorm.weight       blocks.i.ln2.weight
    model.layers.i.mlp.{gate,up}_proj.weight             blocks.i.mlp.fc1.weight [gate; up]
    model.layers.i.mlp.down_proj.weight                  blocks.i.mlp.fc2.weight
    model.norm.weight                                    ln_final.weight
    lm_head.weight                                       unembed.proj.weight
"""

from __future__ import annotations

import inspect
from typing import Any

from ...models import DecoderLM, GlassformerModel
from ...models.config import ModelConfig
from .common import (
    Rule,
    check_option,
    require_config,
    require_embed_dropout,
    require_no_hidden_dropout,
    rule,
    token_id,
    unsupported,
)
from .folder_checks import ConfigSpec

__all__ = ["CONFIG_SPEC", "HF_CLASSES", "build_hf", "config_from_hf", "rules"]

HF_CLASSES: dict[str, type[GlassformerModel]] = {"LlamaForCausalLM": DecoderLM}
_TOKEN_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")
CONFIG_SPEC = ConfigSpec(  # config.json, checked before anything is built (folder_checks.py)
    sizes=(
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
    ),
    nullable=("num_key_value_heads", "head_dim"),
    splits=(("hidden_size", "num_attention_heads"), ("num_attention_heads", "num_key_value_heads")),
    activation="hidden_act",
    activations=("silu",),
)


def config_from_hf(hf_model: Any) -> tuple[type[GlassformerModel], ModelConfig]:
    c, where = hf_model.config, type(hf_model).__name__
    check_option(where, "hidden_act", c.hidden_act, ["silu"])
    check_option(where, "attention_bias", bool(c.attention_bias), [False])
    check_option(where, "mlp_bias", bool(getattr(c, "mlp_bias", False)), [False])
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if head_dim * c.num_attention_heads != c.hidden_size:
        raise unsupported(
            where,
            "head_dim",
            head_dim,
            f"hidden_size / num_attention_heads = {c.hidden_size / c.num_attention_heads:g}",
        )
    n_kv = c.num_key_value_heads or c.num_attention_heads
    config = ModelConfig(
        family="decoder",
        vocab_size=c.vocab_size,
        max_len=c.max_position_embeddings,
        d_model=c.hidden_size,
        n_layer=c.num_hidden_layers,
        n_head=c.num_attention_heads,
        n_kv_head=n_kv,
        d_ff=c.intermediate_size,
        activation="swiglu",
        norm="rms",
        norm_first=True,
        norm_eps=c.rms_norm_eps,
        final_norm=True,
        positional="rotary",
        rope_base=_rope_theta(c, where),
        dropout=0.0,
        attn_dropout=float(c.attention_dropout),
        ff_dropout=0.0,  # LlamaMLP has no dropout
        bias=False,
        tie_embeddings=bool(c.tie_word_embeddings),
        pad_id=token_id(c.pad_token_id, c.vocab_size),
        init_std=c.initializer_range,
        extra={
            "converted_from": where,
            "hf_token_ids": {k: getattr(c, k, None) for k in _TOKEN_KEYS},
        },
    )
    return DecoderLM, config


def _rope_theta(c: Any, where: str) -> float:
    """RoPE's base from ``rope_parameters`` (transformers 5) or ``rope_theta`` (4.x); any
    scaling (linear, dynamic, yarn, llama3, ...) is refused."""
    params = getattr(c, "rope_parameters", None)
    if params is None:  # transformers 4.x
        scaling = getattr(c, "rope_scaling", None)
        if scaling:
            raise unsupported(where, "rope_scaling", scaling, "None (plain RoPE)")
        return float(c.rope_theta)
    plain = {"rope_type", "rope_theta"}
    if params.get("rope_type", "default") != "default" or set(params) - plain:
        raise unsupported(where, "rope_scaling", params, "None (plain RoPE, rope_type 'default')")
    return float(params["rope_theta"])


def rules(config: ModelConfig, hf_class: str) -> list[Rule]:
    out = [
        rule("embed.weight", "model.embed_tokens.weight"),
        rule("ln_final.weight", "model.norm.weight"),
        rule("unembed.proj.weight", "lm_head.weight"),
    ]
    for i in range(config.n_layer):
        g, h = f"blocks.{i}", f"model.layers.{i}"
        out += [
            rule(f"{g}.ln1.weight", f"{h}.input_layernorm.weight"),
            *(rule(f"{g}.attn.{x}_proj.weight", f"{h}.self_attn.{x}_proj.weight") for x in "qkv"),
            rule(f"{g}.attn.out_proj.weight", f"{h}.self_attn.o_proj.weight"),
            rule(f"{g}.ln2.weight", f"{h}.post_attention_layernorm.weight"),
            rule(
                f"{g}.mlp.fc1.weight",
                f"{h}.mlp.gate_proj.weight",
                f"{h}.mlp.up_proj.weight",
                op="cat",
            ),
            rule(f"{g}.mlp.fc2.weight", f"{h}.mlp.down_proj.weight"),
        ]
    return out


def build_hf(model: GlassformerModel, hf_class: str, transformers: Any) -> Any:
    """An untrained LlamaForCausalLM shaped like ``model`` (weights copied later)."""
    c = model.config
    require_config(
        hf_class,
        c,
        positional=("rotary",),
        norm=("rms",),
        norm_first=(True,),
        final_norm=(None, True),
        activation=("swiglu",),
        bias=(False,),
        embed_norm=(False,),
        embed_scale=(False,),
        head_bias=(False,),
        mlm_transform=(False,),
        type_vocab_size=(0,),
    )
    if c.dropout:
        raise ValueError(
            f"{hf_class} cannot express the glassformer option dropout={c.dropout!r} (Llama has "
            "attention dropout only); it needs dropout=0.0. Dropout only acts in training: "
            "set model.config = model.config.replace(dropout=0.0) to export for inference"
        )
    require_no_hidden_dropout(hf_class, c, "Llama has attention dropout only")
    require_embed_dropout(hf_class, c, "Llama has attention dropout only")
    ids = c.extra.get("hf_token_ids", dict.fromkeys(_TOKEN_KEYS))
    options: dict[str, Any] = dict(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        intermediate_size=c.resolved_d_ff,
        num_hidden_layers=c.n_layer,
        num_attention_heads=c.n_head,
        num_key_value_heads=c.resolved_n_kv_head,
        hidden_act="silu",
        max_position_embeddings=c.max_len,
        rms_norm_eps=c.norm_eps,
        attention_bias=False,
        mlp_bias=False,
        attention_dropout=c.dropout if c.attn_dropout is None else c.attn_dropout,
        tie_word_embeddings=c.tie_embeddings,
        initializer_range=c.init_std,
        **ids,
    )
    if "rope_parameters" in inspect.signature(transformers.LlamaConfig.__init__).parameters:
        options["rope_parameters"] = {"rope_type": "default", "rope_theta": c.rope_base}
    else:  # transformers 4.x
        options["rope_theta"] = c.rope_base
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**options))
