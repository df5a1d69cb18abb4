"""Stacks of blocks: X^(m) = TransformerBlock(X^(m-1)) for m = 1..L (notes: "Transformer Block"),
with an optional final norm (needed after pre-norm blocks, whose output is not normalised).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from ..graphs import AttentionGraph
from .arguments import TokenPacking
from .blocks import DecoderBlock, EncoderBlock, run_blocks
from .kv_cache import DecoderCache
from .norms import make_norm

__all__ = [
    "Decoder",
    "Encoder",
    "decoder_blocks",
    "encoder_blocks",
    "lookbacks",
    "make_final_norm",
    "new_decoder_cache",
]


class _Stack(nn.Module):
    """What both stacks share: the ``blocks`` and the final norm ``ln_final`` (None after
    post-norm blocks), named as in TransformerLens, and activation checkpointing of the
    blocks (``checkpointing``, see ``run_blocks``)."""

    checkpointing = False


def make_final_norm(final_norm: bool | None, options: dict, d_model: int) -> nn.Module | None:
    """The norm after the last block (``ln_final``): by default only after pre-norm blocks,
    whose output is not normalised; None when there is none."""
    if final_norm is None:
        final_norm = options.get("norm_first", False)
    if not final_norm:
        return None
    bias = options.get("bias", True)
    return make_norm(options.get("norm", "layer"), d_model, options.get("eps", 1e-5), bias)


def _check_layers(n_layer: int) -> None:
    if isinstance(n_layer, bool) or not isinstance(n_layer, int) or n_layer < 0:
        raise ValueError(f"n_layer must be >= 0 (an int), got {n_layer!r}")


Graphs = "AttentionGraph | list[AttentionGraph | None] | None"


def _per_layer(graphs, n_layer: int, what: str) -> list[AttentionGraph | None]:
    """One graph (or None, every key) per layer, from one graph for all or a list of n_layer."""
    if graphs is None or isinstance(graphs, AttentionGraph):
        return [graphs] * n_layer
    graphs = list(graphs)
    if len(graphs) != n_layer or not all(
        g is None or isinstance(g, AttentionGraph) for g in graphs
    ):
        raise ValueError(
            f"{what}: give one AttentionGraph for all {n_layer} layers or a list of exactly "
            f"{n_layer} (AttentionGraph or None), got {graphs!r}"
        )
    return graphs


def encoder_blocks(
    n_layer: int,
    d_model: int,
    n_head: int,
    d_ff: int,
    *,
    graphs: Graphs = None,
    **block_options: Any,
) -> nn.ModuleList:
    """``n_layer`` EncoderBlocks with the same options, each with its attention graph."""
    _check_layers(n_layer)
    graphs = _per_layer(graphs, n_layer, "graphs")
    return nn.ModuleList(
        EncoderBlock(d_model, n_head, d_ff, graph=g, **block_options) for g in graphs
    )


def decoder_blocks(
    n_layer: int,
    d_model: int,
    n_head: int,
    d_ff: int,
    *,
    cross_attention: bool = True,
    graphs: Graphs = None,
    cross_graphs: Graphs = None,
    **block_options: Any,
) -> nn.ModuleList:
    """``n_layer`` DecoderBlocks with the same options, each with its self- (and cross-)
    attention graph."""
    _check_layers(n_layer)
    graphs = _per_layer(graphs, n_layer, "graphs")
    cross_graphs = _per_layer(cross_graphs, n_layer, "cross_graphs")
    if not cross_attention and any(g is not None for g in cross_graphs):
        raise ValueError("cross_graphs need cross_attention=True")
    return nn.ModuleList(
        DecoderBlock(
            d_model,
            n_head,
            d_ff,
            cross_attention=cross_attention,
            graph=g,
            cross_graph=c,
            **block_options,
        )
        for g, c in zip(graphs, cross_graphs, strict=True)
    )


def lookbacks(blocks: nn.ModuleList) -> list[int | None]:
    """Per decoder block, how far back (i - j) causal self-attention can reach, when bounded
    by its graph (a causal sliding window of w: w - 1), else None."""
    return [None if b.graph is None else b.graph.causal().lookback() for b in blocks]


def new_decoder_cache(
    blocks: nn.ModuleList, max_len: int | None, *, rolling: bool = False
) -> DecoderCache:
    """An empty KV cache for incremental decoding with these decoder blocks. ``rolling``:
    layers whose graph reaches back at most w - 1 positions keep only the latest w."""
    windows = [None if r is None else r + 1 for r in lookbacks(blocks)] if rolling else None
    cross = len(blocks) > 0 and blocks[0].cross_attn is not None
    return DecoderCache(len(blocks), max_len, cross_attention=cross, windows=windows)


class Encoder(_Stack):
    """``n_layer`` EncoderBlocks (same options) and a final norm (default: when norm_first).

    Parts: ``blocks`` (a ModuleList of `EncoderBlock`), ``ln_final`` (None without a final
    norm).

    Args:
        n_layer: the number of blocks, the notes' M.
        d_model: the width C of the stream.
        n_head: attention heads H.
        d_ff: the feed-forward's hidden width.
        final_norm: a norm after the last block (None: when ``norm_first``).
        graphs: the attention graph of every layer, or one per layer (None: every key).
        **block_options: the blocks' keyword options (`EncoderBlock`).
    """

    def __init__(
        self,
        n_layer: int,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        final_norm: bool | None = None,
        graphs: Graphs = None,
        **block_options: Any,
    ) -> None:
        super().__init__()
        self.blocks = encoder_blocks(n_layer, d_model, n_head, d_ff, graphs=graphs, **block_options)
        self.ln_final = make_final_norm(final_norm, block_options, d_model)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        packing: TokenPacking | None = None,
    ) -> Tensor:
        """x (B, T, C) -> (B, T, C); mask broadcastable to (B, H, T, T), True = may attend;
        ``packing``: run on the real tokens only (glassformer.fast.packing.packing_for)."""
        return run_blocks(
            self.blocks,
            x,
            mask,
            causal=causal,
            token_mask=token_mask,
            rope=rope,
            ln_final=self.ln_final,
            checkpointing=self.checkpointing,
            packing=packing,
        )


class Decoder(_Stack):
    """``n_layer`` DecoderBlocks (with cross-attention unless ``cross_attention=False``).

    Parts: ``blocks`` (a ModuleList of `DecoderBlock`), ``ln_final`` (None without a final
    norm).

    Args:
        n_layer: the number of blocks, the notes' M.
        d_model: the width C of the stream.
        n_head: attention heads H.
        d_ff: the feed-forward's hidden width.
        cross_attention: the blocks attend to a memory Z (an encoder-decoder's decoder).
        final_norm: a norm after the last block (None: when ``norm_first``).
        graphs: the self-attention graph of every layer, or one per layer (None: every key;
            self-attention is causal on top).
        cross_graphs: the cross-attention graph of every layer, or one per layer.
        **block_options: the blocks' keyword options (`DecoderBlock`).
    """

    def __init__(
        self,
        n_layer: int,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        cross_attention: bool = True,
        final_norm: bool | None = None,
        graphs: Graphs = None,
        cross_graphs: Graphs = None,
        **block_options: Any,
    ) -> None:
        super().__init__()
        self.cross_attention = cross_attention
        self.blocks = decoder_blocks(
            n_layer,
            d_model,
            n_head,
            d_ff,
            cross_attention=cross_attention,
            graphs=graphs,
            cross_graphs=cross_graphs,
            **block_options,
        )
        self.ln_final = make_final_norm(final_norm, block_options, d_model)

    def lookbacks(self) -> list[int | None]:
        """Per layer, how far back causal self-attention can reach (see ``lookbacks``)."""
        return lookbacks(self.blocks)

    def new_cache(self, max_len: int | None = None, *, rolling: bool = False) -> DecoderCache:
        """An empty KV cache for incremental decoding with this stack (``new_decoder_cache``)."""
        return new_decoder_cache(self.blocks, max_len, rolling=rolling)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        causal: bool = True,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """x (B, T, C), memory (B, S, C) -> (B, T, C). With a cache, x holds only the new
        positions and attends to the cached ones as well."""
        return run_blocks(
            self.blocks,
            x,
            mask,
            memory=memory,
            memory_mask=memory_mask,
            causal=causal,
            token_mask=token_mask,
            rope=rope,
            cache=cache,
            ln_final=self.ln_final,
            checkpointing=self.checkpointing,
        )
