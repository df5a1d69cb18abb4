"""GPT-2: ``transformers.GPT2LMHeadModel`` / ``GPT2ForSequenceClassification`` <->
``glassformer.models.DecoderLM`` / ``DecoderClassifier``.

Pre-norm decoder, learned positions, LayerNorm, tanh-approximated GELU ("gelu_new" =
activation "gelu_tanh"), a final norm ``ln_f`` and an unembedding tied to ``wte``.
GPT-2's Conv1D stores each weight as (in, out), so every matrix is transposed.

    Hugging Face (GPT2LMHeadModel)          glassformer (DecoderLM)
    transformer.wte.weight                  embed.weight (= unembed.proj.weight)
    transformer.wpe.weight                  pos_embed.weight
    transformer.h.i.ln_1.*                  blocks.i.ln1.*
    transformer.h.i.attn.c_attn.*  (Wᵀ)     blocks.i.attn.{q,k,v}_proj.*  (thirds of [Q K V])
    transformer.h.i.attn.c_proj.*  (Wᵀ)     blocks.i.attn.out_proj.*
    transformer.h.i.ln_2.*                  blocks.i.ln2.*
    transformer.h.i.mlp.c_fc.*     (Wᵀ)     blocks.i.mlp.fc1.*
    transformer.h.i.mlp.c_proj.*   (Wᵀ)     blocks.i.mlp.fc2.*
    transformer.ln_f.*                      ln_final.*
    lm_head.weight                          unembed.proj.weight
    score.weight             (classifier)   classifier.weight

The classifier pools the last real token by the attention mask (``pooling="last"``), where
GPT2ForSequenceClassification reads the last token that is not ``pad_token_id``: the two agree
on a text that does not end in ``pad_token_id``. (A GPT-2 classifier often sets it to
<|endoftext|>, which glassformer's commands add as <BOS> and <EOS>: they read that <EOS>.)
Its class names are config.json's ``id2label``.
"""

from __future__ import annotations

from typing import Any

from ...models import DecoderClassifier, DecoderLM, GlassformerModel
from ...models.config import ModelConfig
from .common import (
    ACT_FROM_HF,
    ACT_TO_HF,
    Rule,
    check_option,
    class_labels,
    hf_labels,
    linear,
    require_config,
    require_no_hidden_dropout,
    rule,
    split,
    token_id,
)
from .folder_checks import ConfigSpec

__all__ = ["CONFIG_SPEC", "HF_CLASSES", "build_hf", "config_from_hf", "rules"]

HF_CLASSES: dict[str, type[GlassformerModel]] = {
    "GPT2LMHeadModel": DecoderLM,
    "GPT2ForSequenceClassification": DecoderClassifier,
}
_CLASSIFIER = "GPT2ForSequenceClassification"
CONFIG_SPEC = ConfigSpec(  # config.json, checked before anything is built (folder_checks.py)
    sizes=("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner"),
    nullable=("n_inner",),
    splits=(("n_embd", "n_head"),),
    activation="activation_function",
    activations=tuple(ACT_FROM_HF),
)


def config_from_hf(hf_model: Any) -> tuple[type[GlassformerModel], ModelConfig]:
    c, where = hf_model.config, type(hf_model).__name__
    check_option(where, "add_cross_attention", getattr(c, "add_cross_attention", False), [False])
    check_option(where, "scale_attn_weights", c.scale_attn_weights, [True])
    check_option(
        where, "scale_attn_by_inverse_layer_idx", c.scale_attn_by_inverse_layer_idx, [False]
    )
    check_option(where, "reorder_and_upcast_attn", c.reorder_and_upcast_attn, [False])
    check_option(where, "activation_function", c.activation_function, list(ACT_FROM_HF))
    head: dict[str, Any] = {}
    extra = {"converted_from": where, "hf_token_ids": _token_ids(c)}
    if where == _CLASSIFIER:  # score(h) at the last real token, no dropout before it
        head = dict(n_classes=c.num_labels, pooling="last", pooler=False, classifier_dropout=0.0)
        extra["labels"] = class_labels(where, c)  # the class names, by index: id2label
    config = ModelConfig(
        family="decoder",
        vocab_size=c.vocab_size,
        max_len=c.n_positions,
        d_model=c.n_embd,
        n_layer=c.n_layer,
        n_head=c.n_head,
        d_ff=c.n_inner,
        activation=ACT_FROM_HF[c.activation_function],
        norm="layer",
        norm_first=True,
        norm_eps=c.layer_norm_epsilon,
        final_norm=True,
        positional="learned",
        dropout=c.resid_pdrop,  # on each sub-layer's output (attn and mlp c_proj)
        embed_dropout=None if c.embd_pdrop == c.resid_pdrop else c.embd_pdrop,
        attn_dropout=c.attn_pdrop,
        ff_dropout=0.0,  # GPT2MLP: dropout(c_proj(act(c_fc(x)))), nothing inside
        bias=True,
        tie_embeddings=bool(c.tie_word_embeddings),
        pad_id=token_id(c.pad_token_id, c.vocab_size),
        init_std=c.initializer_range,
        extra=extra,
        **head,
    )
    return HF_CLASSES[where], config


def rules(config: ModelConfig, hf_class: str) -> list[Rule]:
    out = [
        rule("embed.weight", "transformer.wte.weight"),
        rule("pos_embed.weight", "transformer.wpe.weight"),
        *linear("ln_final", "transformer.ln_f"),
        rule("classifier.weight", "score.weight")
        if hf_class == _CLASSIFIER
        else rule("unembed.proj.weight", "lm_head.weight"),
    ]
    for i in range(config.n_layer):
        g, h = f"blocks.{i}", f"transformer.h.{i}"
        out += [
            *linear(f"{g}.ln1", f"{h}.ln_1"),
            *linear(f"{g}.ln2", f"{h}.ln_2"),
            *split((f"{g}.attn.{x}_proj.weight" for x in "qkv"), f"{h}.attn.c_attn.weight", "t"),
            *split((f"{g}.attn.{x}_proj.bias" for x in "qkv"), f"{h}.attn.c_attn.bias"),
            rule(f"{g}.attn.out_proj.weight", f"{h}.attn.c_proj.weight", op="t"),
            rule(f"{g}.attn.out_proj.bias", f"{h}.attn.c_proj.bias"),
            rule(f"{g}.mlp.fc1.weight", f"{h}.mlp.c_fc.weight", op="t"),
            rule(f"{g}.mlp.fc1.bias", f"{h}.mlp.c_fc.bias"),
            rule(f"{g}.mlp.fc2.weight", f"{h}.mlp.c_proj.weight", op="t"),
            rule(f"{g}.mlp.fc2.bias", f"{h}.mlp.c_proj.bias"),
        ]
    return out


def build_hf(model: GlassformerModel, hf_class: str, transformers: Any) -> Any:
    """An untrained GPT-2 of the class ``hf_class``, the same shape as ``model`` (weights
    copied later)."""
    c = model.config
    require_config(
        hf_class,
        c,
        positional=("learned",),
        position_offset=(0,),
        norm=("layer",),
        norm_first=(True,),
        final_norm=(None, True),
        activation=tuple(ACT_TO_HF),
        bias=(True,),
        embed_norm=(False,),
        embed_scale=(False,),
        head_bias=(False,),
        mlm_transform=(False,),
        type_vocab_size=(0,),
    )
    require_config(hf_class, c, n_kv_head=(None, c.n_head))
    require_no_hidden_dropout(hf_class, c, "GPT-2 drops the MLP's output, resid_pdrop")
    ids = c.extra.get("hf_token_ids", {"bos_token_id": None, "eos_token_id": None})
    head = {}
    if hf_class == _CLASSIFIER:  # pooled at the last token that is not pad_token_id
        require_config(hf_class, c, pooling=("last",), pooler=(False,))
        head = {**hf_labels(c), "pad_token_id": c.pad_id}
    ids = {k: v for k, v in ids.items() if k not in head}
    hf_config = transformers.GPT2Config(
        vocab_size=c.vocab_size,
        n_positions=c.max_len,
        n_embd=c.d_model,
        n_layer=c.n_layer,
        n_head=c.n_head,
        n_inner=c.d_ff,
        activation_function=ACT_TO_HF[c.activation],
        resid_pdrop=c.dropout,
        embd_pdrop=c.resolved_embed_dropout,
        attn_pdrop=c.dropout if c.attn_dropout is None else c.attn_dropout,
        layer_norm_epsilon=c.norm_eps,
        initializer_range=c.init_std,
        tie_word_embeddings=c.tie_embeddings,
        **ids,
        **head,
    )
    return getattr(transformers, hf_class)(hf_config)


def _token_ids(c: Any) -> dict[str, Any]:
    """The special-token ids of the HF config, kept in ``extra`` for the way back."""
    return {k: getattr(c, k, None) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
