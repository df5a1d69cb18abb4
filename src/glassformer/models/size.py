"""How big a model is, from its config alone, before anything is allocated.

Parameters are counted part by part, as the modules build them (a tied matrix once, as
``GlassformerModel.num_parameters`` counts them):

    Linear(n → m)        n·m  (+ m with a bias)
    attention            Linear(C → C + 2·H_kv·D) [W^Q; W^K; W^V]  +  Linear(C → C) W^O
    feed-forward         Linear(C → d_ff, or 2·d_ff for swiglu)  +  Linear(d_ff → C)
    norm                 C (rms), 2C (layer with a bias, batch), C (layer without)
    block                attention (+ cross-attention) + feed-forward, a norm for each
    embeddings           V·C tokens, (max_len + position_offset)·C learned positions

Memory: the parameters in their dtype (4 bytes in float32), and for training also their
gradients and AdamW's two moments, 4 × 4 = 16 bytes a parameter in float32; plus the fixed
position tables (sinusoidal, rotary), which are buffers, not parameters. Activations depend on
the batch: ``activation_bytes`` estimates them (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models": 34·C + 5·H·T bytes a token and layer in 16 bits).
"""

from __future__ import annotations

from ..config import ModelConfig

__all__ = ["activation_bytes", "buffer_elements", "count_parameters", "parameter_parts"]

FAMILY_OF = {
    "DecoderLM": "decoder",
    "EncoderModel": "encoder",
    "EncoderMLM": "encoder",
    "EncoderClassifier": "encoder",
    "EncoderDecoder": "encoder-decoder",
}


def count_parameters(config: ModelConfig, architecture: str | type) -> int:
    """``architecture(config).num_parameters()``, computed without building the model;
    ``architecture`` is a model class or its name (config.json's "architecture")."""
    return sum(parameter_parts(config, architecture).values())


def parameter_parts(config: ModelConfig, architecture: str | type) -> dict[str, int]:
    """The parameter count split into "vocabulary" (token embeddings and unembeddings),
    "positions" (learned position rows), "blocks" (the stacks), "classes" (the classifier)
    and "other" (norms, segments, poolers), so a message can name the settings that matter."""
    name = _name(architecture)
    if FAMILY_OF[name] != config.family:
        raise ValueError(f"{name} needs family={FAMILY_OF[name]!r}, got {config.family!r}")
    c, d = config, config.d_model
    parts = dict.fromkeys(("vocabulary", "positions", "blocks", "classes", "other"), 0)

    def embedding(vocab: int, own_tokens: bool) -> None:  # models/inputs.py, InputEmbedding
        parts["vocabulary"] += vocab * d if own_tokens else 0
        if c.positional == "learned":
            parts["positions"] += (c.max_len + c.position_offset) * d
        parts["other"] += c.type_vocab_size * d + (_norm(c, c.bias) if c.embed_norm else 0)

    def lm_head(vocab: int) -> None:  # models/heads.py, LMHead
        if c.mlm_transform:
            parts["other"] += _linear(d, d, True) + _norm(c, True)
        parts["vocabulary"] += 0 if c.tie_embeddings else vocab * d  # W_u, unless it is W_eᵀ
        parts["vocabulary"] += vocab if c.head_bias else 0

    if c.family == "encoder-decoder":
        embedding(c.vocab_size, True)
        embedding(c.target_vocab_size, not c.share_embeddings)
        parts["blocks"] += _stack(c, c.n_layer, False) + _stack(c, c.decoder_layers, True)
        lm_head(c.target_vocab_size)
        return parts
    embedding(c.vocab_size, True)
    parts["blocks"] += _stack(c, c.n_layer, False)
    if name in ("DecoderLM", "EncoderMLM"):
        lm_head(c.vocab_size)
    elif name == "EncoderClassifier":  # models/heads.py, ClassificationHead
        parts["other"] += _linear(d, d, True) if c.pooler else 0
        parts["classes"] += _linear(d, c.n_classes, True)
    elif c.pooler:  # EncoderModel's pooler
        parts["other"] += _linear(d, d, True)
    return parts


def buffer_elements(config: ModelConfig) -> int:
    """Numbers held in fixed position tables (float32 buffers, not parameters): sinusoidal
    (max_len, C), rotary cos and sin (max_len, D) each, one set per input embedding."""
    c = config
    rows = c.max_len + c.position_offset
    per_embedding = {"sinusoidal": rows * c.d_model, "rotary": 2 * rows * c.head_dim}
    embeddings = 2 if c.family == "encoder-decoder" else 1
    return embeddings * per_embedding.get(c.positional, 0)


def activation_bytes(config: ModelConfig, tokens: int, itemsize: int = 4) -> int:
    """About the memory a training step keeps for the backward pass of ``tokens`` tokens
    (batch × length): per token and layer (34·C + 5·H·T)·itemsize/2 bytes (Korthikanti et
    al., with T = max_len), and three numbers per vocabulary entry for the logits."""
    c = config
    layers = c.n_layer + (c.decoder_layers if c.family == "encoder-decoder" else 0)
    per_layer = (34 * c.d_model + 5 * c.n_head * c.max_len) * itemsize // 2
    logits = 3 * c.target_vocab_size * itemsize if c.family != "encoder" else 0
    return tokens * (layers * per_layer + logits)


def _name(architecture: str | type) -> str:
    name = architecture if isinstance(architecture, str) else architecture.__name__
    if name not in FAMILY_OF:
        raise ValueError(f"architecture {name!r} is not known; allowed {sorted(FAMILY_OF)}")
    return name


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _norm(c: ModelConfig, bias: bool) -> int:
    """nn/norms.py: RMSNorm γ; LayerNorm γ (+ β); BatchNorm γ and β always."""
    if c.norm == "rms":
        return c.d_model
    return 2 * c.d_model if bias or c.norm == "batch" else c.d_model


def _stack(c: ModelConfig, n_layer: int, cross: bool) -> int:
    """nn/transformer.py: n_layer blocks and the final norm (default: after pre-norm)."""
    d = c.d_model
    attention = _linear(d, d + 2 * c.kv_heads * c.head_dim, c.bias) + _linear(d, d, c.bias)
    width = 2 * c.ff_dim if c.activation == "swiglu" else c.ff_dim
    feed_forward = _linear(d, width, c.bias) + _linear(c.ff_dim, d, c.bias)
    block = (2 if cross else 1) * (attention + _norm(c, c.bias)) + feed_forward
    block += _norm(c, c.bias)
    final = c.norm_first if c.final_norm is None else c.final_norm
    return n_layer * block + (_norm(c, c.bias) if final else 0)
