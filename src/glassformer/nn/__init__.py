"""The transformer's components, each from its formula in the lecture notes."""

from .blocks import Block, DecoderBlock, EncoderBlock, run_blocks
from .embedding import TokenEmbedding, Unembedding
from .feedforward import ACTIVATIONS, FeedForward
from .hooks import HookPoint, hook_points
from .kv_cache import DecoderCache, KVCache
from .masks import (
    causal_mask,
    combine_masks,
    cross_attention_mask,
    padding_mask,
    padding_mask_from_ids,
)
from .multihead import MultiHeadAttention
from .norms import NORM_KINDS, BatchNorm, LayerNorm, RMSNorm, make_norm
from .positional import (
    POSITIONAL_KINDS,
    POSITIONAL_LAYOUTS,
    LearnedPositionalEncoding,
    NoPositionalEncoding,
    PositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    apply_rotary,
    make_positional_encoding,
    shift_matrix,
    sinusoid_table,
)
from .scaled_dot_product import attention
from .transformer import Decoder, Encoder

__all__ = [
    "ACTIVATIONS",
    "NORM_KINDS",
    "POSITIONAL_KINDS",
    "POSITIONAL_LAYOUTS",
    "BatchNorm",
    "Block",
    "Decoder",
    "DecoderBlock",
    "DecoderCache",
    "Encoder",
    "EncoderBlock",
    "FeedForward",
    "HookPoint",
    "KVCache",
    "LayerNorm",
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "NoPositionalEncoding",
    "PositionalEncoding",
    "RMSNorm",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "TokenEmbedding",
    "Unembedding",
    "apply_rotary",
    "attention",
    "causal_mask",
    "combine_masks",
    "cross_attention_mask",
    "hook_points",
    "make_norm",
    "make_positional_encoding",
    "padding_mask",
    "padding_mask_from_ids",
    "run_blocks",
    "shift_matrix",
    "sinusoid_table",
]
