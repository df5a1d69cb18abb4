"""A model's stack of blocks and its final norm, built from its ModelConfig: the blocks of the
notes' "for l = 1..L" loop, each with its layer's attention graph, and ``ln_final``."""

from __future__ import annotations

from torch import nn

from ..nn.transformer import decoder_blocks, encoder_blocks, make_final_norm
from .config import ModelConfig

__all__ = ["decoder_stack", "encoder_stack"]


def encoder_stack(config: ModelConfig) -> tuple[nn.ModuleList, nn.Module | None]:
    """(``n_layer`` EncoderBlocks, the final norm or None) of an encoder."""
    options = config.block_options()
    final = options.pop("final_norm")
    blocks = encoder_blocks(
        config.n_layer,
        config.d_model,
        config.n_head,
        config.resolved_d_ff,
        graphs=config.layer_graphs("attention_graph"),
        **options,
    )
    return blocks, make_final_norm(final, options, config.d_model)


def decoder_stack(
    config: ModelConfig, *, cross_attention: bool
) -> tuple[nn.ModuleList, nn.Module | None]:
    """(DecoderBlocks, the final norm or None): a decoder-only model's ``n_layer`` blocks
    (``cross_attention=False``, graphs ``attention_graph``) or an encoder-decoder's
    ``n_decoder_layer`` (graphs ``decoder_attention_graph`` and ``cross_attention_graph``)."""
    options = config.block_options()
    final = options.pop("final_norm")
    if cross_attention:
        n, graphs = config.resolved_n_decoder_layer, config.layer_graphs("decoder_attention_graph")
        cross = config.layer_graphs("cross_attention_graph")
    else:
        n, graphs, cross = config.n_layer, config.layer_graphs("attention_graph"), None
    blocks = decoder_blocks(
        n,
        config.d_model,
        config.n_head,
        config.resolved_d_ff,
        cross_attention=cross_attention,
        graphs=graphs,
        cross_graphs=cross,
        **options,
    )
    return blocks, make_final_norm(final, options, config.d_model)
