"""Stacks of blocks: X^(m) = TransformerBlock(X^(m-1)) for m = 1..L (notes: "Transformer Block"),
with an optional final norm (needed after pre-norm blocks, whose output is not normalised).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from .blocks import DecoderBlock, EncoderBlock
from .kv_cache import DecoderCache
from .norms import make_norm
from .packing import Packing

__all__ = ["Decoder", "Encoder"]


class _Stack(nn.Module):
    """What both stacks share: activation checkpointing of their blocks.

    With ``checkpointing`` on (and in training with gradients), each block's activations are
    not kept for the backward pass but recomputed there: memory for one block instead of L,
    at the cost of a second forward pass through every block."""

    checkpointing = False
    recorder = None  # inspection probe, see glassformer.inspect.capture

    def _run(self, layer: nn.Module, x: Tensor, *args, **kwargs) -> Tensor:
        if self.checkpointing and self.training and torch.is_grad_enabled():
            return checkpoint(layer, x, *args, use_reentrant=False, **kwargs)
        return layer(x, *args, **kwargs)


def _final_norm(final_norm: bool | None, options: dict, d_model: int) -> nn.Module | None:
    if final_norm is None:
        final_norm = options.get("norm_first", False)
    if not final_norm:
        return None
    bias = options.get("bias", True)
    return make_norm(options.get("norm", "layer"), d_model, options.get("eps", 1e-5), bias)


def _check_layers(n_layer: int) -> None:
    if n_layer < 0:
        raise ValueError(f"n_layer must be >= 0, got {n_layer}")


class Encoder(_Stack):
    """``n_layer`` EncoderBlocks (same options) and a final norm (default: when norm_first)."""

    def __init__(
        self,
        n_layer: int,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        final_norm: bool | None = None,
        **block_options,
    ) -> None:
        super().__init__()
        _check_layers(n_layer)
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_head, d_ff, **block_options) for _ in range(n_layer)
        )
        self.norm = _final_norm(final_norm, block_options, d_model)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        """x (B, T, C) -> (B, T, C); mask broadcastable to (B, H, T, T), True = may attend.

        Inference on a padded CPU batch (eval mode, no gradients, ``token_mask`` with padding
        and a ``mask`` that hides the padded keys from every real query, as the models build
        it) runs the position-wise work on the real tokens only (packing.py); the output is
        zero at the padding then. Any other mask (full, a graph's) takes the ordinary path."""
        if self._packs(x, mask, token_mask) and _hides_padding(mask, token_mask, causal):
            packing = Packing.from_mask(token_mask)
            x = packing.pack(x)  # (N, C): every row real, so the norms need no token_mask
            for layer in self.layers:
                x = layer(x, mask, causal=causal, rope=rope, packing=packing)
            return packing.unpack(x if self.norm is None else self.norm(x, None))
        for layer in self.layers:
            x = self._run(layer, x, mask, causal=causal, token_mask=token_mask, rope=rope)
        out = x if self.norm is None else self.norm(x, token_mask)
        if self.recorder is not None:
            self.recorder.stack_output(x, out)  # before and after the final norm
        return out

    def _packs(self, x: Tensor, mask: Tensor | None, token_mask: Tensor | None) -> bool:
        return (
            token_mask is not None
            and mask is not None
            and x.device.type == "cpu"
            and not self.training
            and not torch.is_grad_enabled()
            and self.recorder is None
            and not torch.compiler.is_compiling()
            and not bool(token_mask.all())
        )


def _hides_padding(mask: Tensor, token_mask: Tensor, causal: bool) -> bool:
    """Does no real query see a padded key? Only then may packing drop the padded tokens:
    their keys and values would otherwise take part in the real tokens' attention."""
    b, t = token_mask.shape
    seen = mask.bool()  # broadcastable to (B, H, T, T)
    if causal:
        seen = seen & torch.ones(t, t, dtype=torch.bool, device=mask.device).tril()
    real_query = token_mask.view(b, 1, t, 1)
    padded_key = ~token_mask.view(b, 1, 1, t)
    return not bool((seen & real_query & padded_key).any())


class Decoder(_Stack):
    """``n_layer`` DecoderBlocks (with cross-attention unless ``cross_attention=False``)."""

    def __init__(
        self,
        n_layer: int,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        cross_attention: bool = True,
        final_norm: bool | None = None,
        **block_options,
    ) -> None:
        super().__init__()
        _check_layers(n_layer)
        self.cross_attention = cross_attention
        self.layers = nn.ModuleList(
            DecoderBlock(d_model, n_head, d_ff, cross_attention=cross_attention, **block_options)
            for _ in range(n_layer)
        )
        self.norm = _final_norm(final_norm, block_options, d_model)

    def new_cache(self, max_len: int | None = None) -> DecoderCache:
        """An empty KV cache for incremental decoding with this stack."""
        return DecoderCache(len(self.layers), max_len, cross_attention=self.cross_attention)

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
        n = len(self.layers)
        self_caches = [None] * n if cache is None else cache.self_attn
        cross_caches = [None] * n if cache is None or cache.cross_attn is None else cache.cross_attn
        for layer, c_self, c_cross in zip(self.layers, self_caches, cross_caches, strict=True):
            x = self._run(
                layer,
                x,
                memory,
                mask,
                memory_mask,
                causal=causal,
                token_mask=token_mask,
                rope=rope,
                cache=c_self,
                memory_cache=c_cross,
            )
        out = x if self.norm is None else self.norm(x, token_mask)
        if self.recorder is not None:
            self.recorder.stack_output(x, out)  # before and after the final norm
        return out
