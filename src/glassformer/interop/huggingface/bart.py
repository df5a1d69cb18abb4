"""BART: ``transformers.BartForConditionalGeneration`` <-> ``glassformer.models.EncoderDecoder``.

Post-norm encoder-decoder; learned positions whose table starts at row 2 (``position_offset=2``);
a LayerNorm on each side's embeddings (``embed_norm``); token embeddings optionally scaled by
√d_model (``scale_embedding`` -> ``embed_scale``); one token embedding shared by encoder, decoder
and the unembedding; logits + ``final_logits_bias`` (the head bias); decoding starts from
``decoder_start_token_id`` (``decoder_start_id``, </s> in BART). No final norm.

    Hugging Face (BartForConditionalGeneration)   glassformer (EncoderDecoder)
    model.shared.weight (= model.encoder.embed_tokens, model.decoder.embed_tokens, lm_head)
                                                  encoder.embed.weight (= decoder.embed,
                                                      unembed.proj.weight)
    model.encoder.embed_positions.weight          encoder.pos_embed.weight
    model.encoder.layernorm_embedding.*           encoder.ln_embed.*
    model.decoder.embed_positions.weight          decoder.pos_embed.weight
    model.decoder.layernorm_embedding.*           decoder.ln_embed.*
    final_logits_bias (1, N_V), a buffer          unembed.proj.bias (N_V,)
    and for X = encoder, decoder, each layer i:
    model.X.layers.i.self_attn.{q,k,v}_proj.*     X.blocks.i.attn.{q,k,v}_proj.*
    model.X.layers.i.self_attn.out_proj.*         X.blocks.i.attn.out_proj.*
    model.X.layers.i.self_attn_layer_norm.*       X.blocks.i.ln1.*
    model.X.layers.i.fc1.*, fc2.*                 X.blocks.i.mlp.fc1.*, mlp.fc2.*
    model.X.layers.i.final_layer_norm.*           X.blocks.i.ln2.* (encoder), ln3.* (decoder)
    model.decoder.layers.i.encoder_attn.{q,k,v}_proj.*   decoder.blocks.i.cross_attn.{q,k,v}_proj.*
    model.decoder.layers.i.encoder_attn.out_proj.*       decoder.blocks.i.cross_attn.out_proj.*
    model.decoder.layers.i.encoder_attn_layer_norm.*     decoder.blocks.i.ln2.*
"""

from __future__ import annotations

from typing import Any

from ...models import EncoderDecoder, GlassformerModel
from ...models.config import ModelConfig
from .common import (
    ACT_FROM_HF,
    ACT_TO_HF,
    Rule,
    check_option,
    linear,
    require_config,
    require_embed_dropout,
    rule,
    token_id,
)
from .folder_checks import ConfigSpec

__all__ = ["CONFIG_SPEC", "HF_CLASSES", "build_hf", "config_from_hf", "rules"]

HF_CLASSES: dict[str, type[GlassformerModel]] = {"BartForConditionalGeneration": EncoderDecoder}
_OFFSET = 2  # BartLearnedPositionalEmbedding reads row position + 2
_EPS = 1e-5  # BART's LayerNorms use torch's default eps
_TOKEN_KEYS = ("bos_token_id", "eos_token_id", "forced_eos_token_id")
CONFIG_SPEC = ConfigSpec(  # config.json, checked before anything is built (folder_checks.py)
    sizes=(
        "vocab_size",
        "d_model",
        "encoder_layers",
        "decoder_layers",
        "encoder_attention_heads",
        "decoder_attention_heads",
        "encoder_ffn_dim",
        "decoder_ffn_dim",
        "max_position_embeddings",
    ),
    splits=(("d_model", "encoder_attention_heads"), ("d_model", "decoder_attention_heads")),
    activation="activation_function",
    activations=tuple(ACT_FROM_HF),
)


def config_from_hf(hf_model: Any) -> tuple[type[GlassformerModel], ModelConfig]:
    c, where = hf_model.config, type(hf_model).__name__
    for flag in ("normalize_before", "add_final_layer_norm"):  # mBART-style options
        check_option(where, flag, bool(getattr(c, flag, False)), [False])
    check_option(
        where, "decoder_attention_heads", c.decoder_attention_heads, [c.encoder_attention_heads]
    )
    check_option(where, "decoder_ffn_dim", c.decoder_ffn_dim, [c.encoder_ffn_dim])
    check_option(where, "activation_function", c.activation_function, list(ACT_FROM_HF))
    check_option(where, "tie_word_embeddings", bool(c.tie_word_embeddings), [True])
    config = ModelConfig(
        family="encoder-decoder",
        vocab_size=c.vocab_size,
        max_len=c.max_position_embeddings,
        d_model=c.d_model,
        n_layer=c.encoder_layers,
        n_decoder_layer=c.decoder_layers,
        n_head=c.encoder_attention_heads,
        d_ff=c.encoder_ffn_dim,
        activation=ACT_FROM_HF[c.activation_function],
        norm="layer",
        norm_first=False,
        norm_eps=_EPS,
        final_norm=False,
        embed_norm=True,
        positional="learned",
        position_offset=_OFFSET,
        embed_scale=bool(c.scale_embedding),
        dropout=c.dropout,
        attn_dropout=c.attention_dropout,
        ff_dropout=float(c.activation_dropout),  # fc2(dropout(act(fc1(x)))) at its own rate
        bias=True,
        tie_embeddings=True,
        share_embeddings=True,
        head_bias=True,
        pad_id=token_id(c.pad_token_id, c.vocab_size),
        decoder_start_id=token_id(c.decoder_start_token_id, c.vocab_size, 1),
        init_std=c.init_std,
        extra={
            "converted_from": where,
            "hf_token_ids": {k: getattr(c, k, None) for k in _TOKEN_KEYS},
        },
    )
    return EncoderDecoder, config


def rules(config: ModelConfig, hf_class: str) -> list[Rule]:
    out = [
        rule("encoder.embed.weight", "model.shared.weight"),
        rule("unembed.proj.bias", "final_logits_bias"),
    ]
    for side, n in (("encoder", config.n_layer), ("decoder", config.resolved_n_decoder_layer)):
        out += [
            rule(f"{side}.pos_embed.weight", f"model.{side}.embed_positions.weight"),
            *linear(f"{side}.ln_embed", f"model.{side}.layernorm_embedding"),
        ]
        for i in range(n):
            g, h = f"{side}.blocks.{i}", f"model.{side}.layers.{i}"
            out += _attention(f"{g}.attn", f"{h}.self_attn")
            out += linear(f"{g}.ln1", f"{h}.self_attn_layer_norm")
            if side == "decoder":
                out += _attention(f"{g}.cross_attn", f"{h}.encoder_attn")
                out += linear(f"{g}.ln2", f"{h}.encoder_attn_layer_norm")
            out += [
                *linear(f"{g}.mlp.fc1", f"{h}.fc1"),
                *linear(f"{g}.mlp.fc2", f"{h}.fc2"),
                *linear(f"{g}.{'ln3' if side == 'decoder' else 'ln2'}", f"{h}.final_layer_norm"),
            ]
    return out


def _attention(glass: str, hf: str) -> list[Rule]:
    """q_proj, k_proj, v_proj, out_proj: the same names in both libraries."""
    return [r for p in ("q_proj", "k_proj", "v_proj", "out_proj")
            for r in linear(f"{glass}.{p}", f"{hf}.{p}")]  # fmt: skip


def build_hf(model: GlassformerModel, hf_class: str, transformers: Any) -> Any:
    """An untrained BartForConditionalGeneration shaped like ``model`` (weights copied later)."""
    c = model.config
    require_config(
        hf_class,
        c,
        positional=("learned",),
        position_offset=(_OFFSET,),
        norm=("layer",),
        norm_eps=(_EPS,),
        norm_first=(False,),
        final_norm=(None, False),
        embed_norm=(True,),
        activation=tuple(ACT_TO_HF),
        bias=(True,),
        share_embeddings=(True,),
        tie_embeddings=(True,),
        head_bias=(True,),
        type_vocab_size=(0,),
        mlm_transform=(False,),
    )
    require_config(hf_class, c, n_kv_head=(None, c.n_head))
    require_embed_dropout(hf_class, c, "BART drops them at dropout")
    ids = c.extra.get("hf_token_ids", dict.fromkeys(_TOKEN_KEYS))
    hf_config = transformers.BartConfig(
        vocab_size=c.vocab_size,
        max_position_embeddings=c.max_len,
        d_model=c.d_model,
        encoder_layers=c.n_layer,
        decoder_layers=c.resolved_n_decoder_layer,
        encoder_attention_heads=c.n_head,
        decoder_attention_heads=c.n_head,
        encoder_ffn_dim=c.resolved_d_ff,
        decoder_ffn_dim=c.resolved_d_ff,
        activation_function=ACT_TO_HF[c.activation],
        dropout=c.dropout,
        attention_dropout=c.dropout if c.attn_dropout is None else c.attn_dropout,
        activation_dropout=c.resolved_ff_dropout,
        init_std=c.init_std,
        scale_embedding=c.embed_scale,
        pad_token_id=c.pad_id,
        decoder_start_token_id=c.decoder_start_id,
        tie_word_embeddings=True,
        **ids,
    )
    return transformers.BartForConditionalGeneration(hf_config)
