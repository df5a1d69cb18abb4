"""BERT: ``transformers.BertModel`` / ``BertForMaskedLM`` / ``BertForSequenceClassification``
<-> ``glassformer.models.EncoderModel`` / ``EncoderMLM`` / ``EncoderClassifier``.

Post-norm encoder with learned absolute positions, token-type (segment) embeddings and a
LayerNorm on the embeddings; no final norm. The query/key/value Linears are glassformer's
``q_proj``, ``k_proj``, ``v_proj``.

    Hugging Face (prefix "bert." except in BertModel)   glassformer
    embeddings.word_embeddings.weight                   embed.weight
    embeddings.position_embeddings.weight               pos_embed.weight
    embeddings.token_type_embeddings.weight             token_type_embed.weight
    embeddings.LayerNorm.*                              ln_embed.*
    encoder.layer.i.attention.self.{query,key,value}.*  blocks.i.attn.{q,k,v}_proj.*
    encoder.layer.i.attention.output.dense.*            blocks.i.attn.out_proj.*
    encoder.layer.i.attention.output.LayerNorm.*        blocks.i.ln1.*
    encoder.layer.i.intermediate.dense.*                blocks.i.mlp.fc1.*
    encoder.layer.i.output.dense.*                      blocks.i.mlp.fc2.*
    encoder.layer.i.output.LayerNorm.*                  blocks.i.ln2.*
    pooler.dense.*                   (BertModel)        pooler.*
    cls.predictions.transform.dense.*     (MLM)         transform.*
    cls.predictions.transform.LayerNorm.* (MLM)         transform_norm.*
    cls.predictions.decoder.weight        (MLM, tied)   unembed.proj.weight
    cls.predictions.bias                  (MLM)         unembed.proj.bias
    bert.pooler.dense.*              (classifier)       pooler.*
    classifier.*                     (classifier)       classifier.*
"""

from __future__ import annotations

from typing import Any

from ...models import EncoderClassifier, EncoderMLM, EncoderModel, GlassformerModel
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
    require_embed_dropout,
    require_no_hidden_dropout,
    rule,
    token_id,
)
from .folder_checks import ConfigSpec

__all__ = ["CONFIG_SPEC", "HF_CLASSES", "build_hf", "config_from_hf", "load_options", "rules"]

HF_CLASSES: dict[str, type[GlassformerModel]] = {
    "BertModel": EncoderModel,
    "BertForMaskedLM": EncoderMLM,
    "BertForSequenceClassification": EncoderClassifier,
}
# glassformer's MLM transform applies GELU (erf, or tanh for "gelu_tanh") whatever the encoder's
# activation, so a BERT masked LM must use a GELU
_MLM_ACTS = ("gelu", "gelu_new", "gelu_pytorch_tanh")
CONFIG_SPEC = ConfigSpec(  # config.json, checked before anything is built (folder_checks.py)
    sizes=(
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_position_embeddings",
        "type_vocab_size",
    ),
    splits=(("hidden_size", "num_attention_heads"),),
    activation="hidden_act",
    activations=tuple(ACT_FROM_HF),
)


def config_from_hf(hf_model: Any) -> tuple[type[GlassformerModel], ModelConfig]:
    c, where = hf_model.config, type(hf_model).__name__
    pos_type = getattr(c, "position_embedding_type", "absolute")
    check_option(where, "position_embedding_type", pos_type, ["absolute"])
    check_option(where, "is_decoder", bool(c.is_decoder), [False])
    check_option(where, "add_cross_attention", bool(c.add_cross_attention), [False])
    mlm = where == "BertForMaskedLM"
    check_option(where, "hidden_act", c.hidden_act, _MLM_ACTS if mlm else list(ACT_FROM_HF))
    if mlm:
        check_option(where, "tie_word_embeddings", bool(c.tie_word_embeddings), [True])
    classifier = where == "BertForSequenceClassification"
    pooler = classifier or (where == "BertModel" and hf_model.pooler is not None)
    labels = {"labels": class_labels(where, c)} if classifier else {}  # by index: id2label
    config = ModelConfig(
        family="encoder",
        vocab_size=c.vocab_size,
        max_len=c.max_position_embeddings,
        d_model=c.hidden_size,
        n_layer=c.num_hidden_layers,
        n_head=c.num_attention_heads,
        d_ff=c.intermediate_size,
        activation=ACT_FROM_HF[c.hidden_act],
        norm="layer",
        norm_first=False,
        norm_eps=c.layer_norm_eps,
        final_norm=False,
        embed_norm=True,
        positional="learned",
        type_vocab_size=c.type_vocab_size,
        dropout=c.hidden_dropout_prob,  # after each output dense, and on the embeddings
        attn_dropout=c.attention_probs_dropout_prob,
        classifier_dropout=getattr(c, "classifier_dropout", None),  # None: hidden_dropout_prob
        ff_dropout=0.0,  # BertIntermediate: act(dense(x)), no dropout
        bias=True,
        tie_embeddings=True,
        head_bias=mlm,
        mlm_transform=mlm,
        n_classes=c.num_labels if classifier else 2,
        pooling="cls",
        pooler=pooler,
        pad_id=token_id(c.pad_token_id, c.vocab_size),
        init_std=c.initializer_range,
        extra={"converted_from": where, **labels},
    )
    return HF_CLASSES[where], config


def load_options(hf_class: str, names: list[str] | None) -> dict[str, Any]:
    """``from_pretrained``'s arguments that the weights' tensor ``names`` decide: a BertModel
    saved without its pooler (``add_pooling_layer=False``) is read without one."""
    if hf_class != "BertModel" or names is None:
        return {}
    return {"add_pooling_layer": any(n.startswith(("pooler.", "bert.pooler.")) for n in names)}


def rules(config: ModelConfig, hf_class: str) -> list[Rule]:
    p = "" if hf_class == "BertModel" else "bert."
    e = f"{p}embeddings"
    out = [
        rule("embed.weight", f"{e}.word_embeddings.weight"),
        rule("pos_embed.weight", f"{e}.position_embeddings.weight"),
        rule("token_type_embed.weight", f"{e}.token_type_embeddings.weight"),
        *linear("ln_embed", f"{e}.LayerNorm"),
    ]
    for i in range(config.n_layer):
        g, h = f"blocks.{i}", f"{p}encoder.layer.{i}"
        out += [
            *linear(f"{g}.attn.q_proj", f"{h}.attention.self.query"),
            *linear(f"{g}.attn.k_proj", f"{h}.attention.self.key"),
            *linear(f"{g}.attn.v_proj", f"{h}.attention.self.value"),
            *linear(f"{g}.attn.out_proj", f"{h}.attention.output.dense"),
            *linear(f"{g}.ln1", f"{h}.attention.output.LayerNorm"),
            *linear(f"{g}.mlp.fc1", f"{h}.intermediate.dense"),
            *linear(f"{g}.mlp.fc2", f"{h}.output.dense"),
            *linear(f"{g}.ln2", f"{h}.output.LayerNorm"),
        ]
    if hf_class == "BertModel" and config.pooler:
        out += linear("pooler", "pooler.dense")
    elif hf_class == "BertForMaskedLM":
        out += [
            *linear("transform", "cls.predictions.transform.dense"),
            *linear("transform_norm", "cls.predictions.transform.LayerNorm"),
            rule("unembed.proj.weight", "cls.predictions.decoder.weight"),
            rule("unembed.proj.bias", "cls.predictions.decoder.bias"),
        ]
    elif hf_class == "BertForSequenceClassification":
        out += [
            *linear("pooler", "bert.pooler.dense"),
            *linear("classifier", "classifier"),
        ]
    return out


def build_hf(model: GlassformerModel, hf_class: str, transformers: Any) -> Any:
    """An untrained BERT model of the same shape as ``model`` (weights copied later)."""
    c = model.config
    require_config(
        hf_class,
        c,
        positional=("learned",),
        position_offset=(0,),
        norm=("layer",),
        norm_first=(False,),
        final_norm=(None, False),
        embed_norm=(True,),
        embed_scale=(False,),
        bias=(True,),
        activation=tuple(ACT_TO_HF),
    )
    require_config(hf_class, c, n_kv_head=(None, c.n_head))
    require_no_hidden_dropout(hf_class, c, "BERT drops the output dense's, hidden_dropout_prob")
    require_embed_dropout(hf_class, c, "BERT drops them at hidden_dropout_prob")
    if c.type_vocab_size < 1:
        raise ValueError(
            f"{hf_class} cannot express the glassformer option type_vocab_size=0; BERT always "
            "has token-type embeddings (type_vocab_size >= 1)"
        )
    if hf_class == "BertForMaskedLM":
        require_config(
            hf_class,
            c,
            mlm_transform=(True,),
            head_bias=(True,),
            tie_embeddings=(True,),
            activation=("gelu", "gelu_tanh"),
        )
    if hf_class == "BertForSequenceClassification":
        require_config(hf_class, c, pooler=(True,), pooling=("cls",))
    elif hf_class == "BertModel" and c.pooler:
        require_config(hf_class, c, pooling=("cls",))  # BertPooler reads the first token
    hf_config = transformers.BertConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        num_hidden_layers=c.n_layer,
        num_attention_heads=c.n_head,
        intermediate_size=c.resolved_d_ff,
        hidden_act=ACT_TO_HF[c.activation],
        hidden_dropout_prob=c.dropout,
        attention_probs_dropout_prob=c.dropout if c.attn_dropout is None else c.attn_dropout,
        classifier_dropout=c.classifier_dropout,
        max_position_embeddings=c.max_len,
        type_vocab_size=c.type_vocab_size,
        layer_norm_eps=c.norm_eps,
        initializer_range=c.init_std,
        pad_token_id=c.pad_id,
        **hf_labels(c),
    )
    if hf_class == "BertModel":
        return transformers.BertModel(hf_config, add_pooling_layer=c.pooler)
    return getattr(transformers, hf_class)(hf_config)
