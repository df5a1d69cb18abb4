"""Transformer blocks: attention and feed-forward sub-layers, each wrapped in a residual
connection and a norm (notes: "Transformer Layers"; Vaswani et al. Fig. 1).

The pseudocode of Phuong & Hutter, "Formal Algorithms for Transformers" (2022), has both
layouts: Algorithms 8 (EDTransformer) and 9 (ETransformer) are post-norm, "add, then
layer_norm", as Vaswani et al. and BERT; Algorithm 10 (DTransformer) is pre-norm,
"layer_norm, then attention, then add", as GPT-2. Each forward below writes them as lines,
pre-norm and post-norm as two branches:

    pre-norm  (GPT-2, Algorithm 10, norm_first=True)       X ← X + MHAttention(layer_norm(X))
                                                        X ← X + MLP(layer_norm(X))
    post-norm (Vaswani et al., Algorithms 8, 9,         X ← layer_norm(X + MHAttention(X))
               norm_first=False)                        X ← layer_norm(X + MLP(X))

One class, ``Block``, is every layer: self-attention, then cross-attention to the memory Z
when it has one, then the feed-forward, written once in ``Block.forward``. ``EncoderBlock``
(Algorithm 9's layer; torch.nn.TransformerEncoderLayer) and ``DecoderBlock`` (Algorithm 8's
decoder layer, torch.nn.TransformerDecoderLayer; with ``cross_attention=False`` the GPT layer
of Algorithm 10) are Block with their defaults: no cross-attention and bidirectional, or
cross-attention and causal. ``run_blocks`` is the one loop over a stack of them,
X^(l) = Block_l(X^(l-1)) for l = 1..L, that every stack and model calls.

Dropout sites (training only; the identity in eval mode), pre-norm written out:

    A ← dropout_{attn_dropout}(softmax(Q Kᵀ / √d_k))        inside MHAttention
    X ← X + dropout_{dropout}(MHAttention(layer_norm(X)))
    X ← X + dropout_{dropout}(W_2 · dropout_{ff_dropout}(a(W_1 · layer_norm(X))))

``ff_dropout`` None is ``dropout``: torch.nn.TransformerEncoderLayer's layout (its ``dropout``
after the activation, ``dropout1`` / ``dropout2`` on the sub-layer outputs). GPT-2 (attn_pdrop,
resid_pdrop after each c_proj) and BERT (attention_probs_dropout_prob, hidden_dropout_prob
after each output dense) do not drop the hidden layer: ``ff_dropout=0.0``. BART drops it at
its own rate, ``activation_dropout``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ..graphs import AttentionGraph
from .arguments import TokenPacking
from .feedforward import FeedForward
from .hooks import HookPoint
from .kv_cache import DecoderCache, KVCache
from .multihead import MultiHeadAttention
from .norms import make_norm

__all__ = ["Block", "DecoderBlock", "EncoderBlock", "run_blocks"]


class Block(nn.Module):
    """Self-attention, cross-attention to the memory Z (``cross_attention``), feed-forward,
    each in its residual connection (Algorithms 8-10's layers).

    Parts under TransformerLens's names: ``ln1``, ``attn`` (`MultiHeadAttention`), then
    ``ln2``, ``cross_attn`` (attention to Z) and ``ln3`` in a block that cross-attends,
    ``mlp`` (`FeedForward`) after ``ln2`` (``ln3`` when the block cross-attends), as in
    TransformerLens's GPT-2 and T5 blocks.

    Hook points: ``hook_resid_pre`` the stream X entering the block, ``hook_attn_out`` /
    ``hook_cross_attn_out`` / ``hook_mlp_out`` what each sub-layer writes (after dropout),
    ``hook_resid_mid`` (and ``hook_resid_mid_cross``) the stream after attention (and
    cross-attention), ``hook_resid_post`` the block's output; each norm's output is its
    ``hook_normalized``.

    Args:
        d_model: the width C of the stream.
        n_head: attention heads H.
        d_ff: the feed-forward's hidden width.
        cross_attention: a cross-attention sub-layer to the memory Z (an encoder-decoder's
            decoder).
        n_kv_head: key/value heads (grouped-query attention), None: n_head.
        activation: the feed-forward's ("relu"; `FeedForward`).
        norm: "layer", "rms" or "batch".
        norm_first: False: post-norm, Vaswani et al.; True: pre-norm, the notes and GPT-2.
        dropout: on each sub-layer's output (``self.dropout``).
        attn_dropout: on the attention weights (None: = dropout).
        ff_dropout: on the feed-forward's hidden layer (``mlp.dropout``; None: = dropout,
            torch.nn's layout; 0.0: GPT-2's and BERT's).
        bias: biases in the projections and norms.
        eps: the norms' ε.
        graph: the attention graph (glassformer.graphs) of the self-attention, None for
            every key (Transformers as GNNs: each layer may use its own graph).
        cross_graph: the cross-attention's graph.
        attention_scores: how the self-attention scores a query against a key ("separate",
            "shared" or "dot"; `MultiHeadAttention`); cross-attention keeps separate W^Q,
            W^K (its queries and keys come from two sequences).
    """

    causal = False  # the self-attention's default, when a call does not say

    def __init__(
        self,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        cross_attention: bool = False,
        n_kv_head: int | None = None,
        activation: str = "relu",
        norm: str = "layer",
        norm_first: bool = False,
        dropout: float = 0.0,
        attn_dropout: float | None = None,
        ff_dropout: float | None = None,
        bias: bool = True,
        eps: float = 1e-5,
        graph: AttentionGraph | None = None,
        cross_graph: AttentionGraph | None = None,
        attention_scores: str = "separate",
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.graph, self.cross_graph = graph, cross_graph  # None: every key (a complete graph)
        p_attn = dropout if attn_dropout is None else attn_dropout
        options = dict(n_kv_head=n_kv_head, bias=bias, dropout=p_attn)
        self.hook_resid_pre = HookPoint()
        self.attn = MultiHeadAttention(
            d_model, n_head, attention_scores=attention_scores, **options
        )
        self.ln1 = make_norm(norm, d_model, eps, bias)
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.cross_attn = None
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_head, **options)
            self.ln2 = make_norm(norm, d_model, eps, bias)
            self.hook_cross_attn_out = HookPoint()
            self.hook_resid_mid_cross = HookPoint()
        p_ff = dropout if ff_dropout is None else ff_dropout  # the hidden layer's rate
        self.mlp = FeedForward(d_model, d_ff, activation, bias=bias, dropout=p_ff)
        if cross_attention:
            self.ln3 = make_norm(norm, d_model, eps, bias)
        else:
            self.ln2 = make_norm(norm, d_model, eps, bias)
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()
        self.dropout = nn.Dropout(dropout)

    @property
    def ln_mlp(self) -> nn.Module:
        """The norm of the feed-forward sub-layer: ``ln3`` after cross-attention, else ``ln2``."""
        return self.ln2 if self.cross_attn is None else self.ln3

    def _drop(self, u: Tensor) -> Tensor:
        return self.dropout(u) if self.training else u  # the identity in eval mode

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        causal: bool | None = None,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        cache: KVCache | None = None,
        memory_cache: KVCache | None = None,
        packing: TokenPacking | None = None,
    ) -> Tensor:
        """x (B, T, C) (and the memory Z (B, S, C)) -> (B, T, C).

        Args:
            x: (B, T, C) the stream X; (N, C) the real tokens alone under ``packing``.
            mask: self-attention mask broadcastable to (B, H, T, T_all), True = may attend.
            memory: (B, S, C) the memory Z, exactly when the block cross-attends.
            memory_mask: cross-attention mask broadcastable to (B, H, T, S).
            causal: add the causal mask (None: the block's default, ``causal``).
            token_mask: (B, T) the real tokens, for the norms (BatchNorm skips padding).
            rope: (cos, sin) rotary tables of the T positions.
            cache: the self-attention's KV cache (incremental decoding).
            memory_cache: the cross-attention's KV cache.
            packing: where the N real tokens of x sit in the (B, T) batch, when x holds them
                alone (glassformer.fast.packing); attention attends in the (B, T) layout.
        """
        if (memory is None) != (self.cross_attn is None):
            raise ValueError(
                f"{type(self).__name__}: pass memory exactly when the block has cross-attention "
                f"(cross_attention={self.cross_attn is not None}, "
                f"memory given={memory is not None})"
            )
        causal = self.causal if causal is None else causal
        attn_args = dict(
            mask=mask, causal=causal, graph=self.graph, rope=rope, cache=cache, packing=packing
        )
        if memory is not None:  # the target positions query the memory Z
            q0 = 0 if cache is None else cache.position  # x's first position, not yet cached
            cross_args = dict(
                mask=memory_mask, graph=self.cross_graph, query_start=q0, cache=memory_cache
            )
        resid_pre = self.hook_resid_pre(x)
        if self.norm_first:  # pre-norm, the notes: X ← X + F(layer_norm(X))
            attn_out = self.attn(self.ln1(resid_pre, token_mask), **attn_args)
            attn_out = self.hook_attn_out(self._drop(attn_out))
            resid = self.hook_resid_mid(resid_pre + attn_out)
            if memory is not None:
                cross_out = self.cross_attn(self.ln2(resid, token_mask), memory, **cross_args)
                cross_out = self.hook_cross_attn_out(self._drop(cross_out))
                resid = self.hook_resid_mid_cross(resid + cross_out)
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(self.ln_mlp(resid, token_mask))))
            resid_post = resid + mlp_out
        else:  # post-norm, Vaswani et al.: X ← layer_norm(X + F(X))
            attn_out = self.hook_attn_out(self._drop(self.attn(resid_pre, **attn_args)))
            resid = self.hook_resid_mid(self.ln1(resid_pre + attn_out, token_mask))
            if memory is not None:
                cross_out = self.cross_attn(resid, memory, **cross_args)
                cross_out = self.hook_cross_attn_out(self._drop(cross_out))
                resid = self.hook_resid_mid_cross(self.ln2(resid + cross_out, token_mask))
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(resid)))
            resid_post = self.ln_mlp(resid + mlp_out, token_mask)
        return self.hook_resid_post(resid_post)


class EncoderBlock(Block):
    """A Block without cross-attention, bidirectional unless a call says ``causal=True``
    (Algorithm 9's layer). Arguments as `Block`'s."""

    def __init__(self, d_model: int, n_head: int, d_ff: int, **options: Any) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=False, **options)


class DecoderBlock(Block):
    """A causal Block, with cross-attention to the memory Z unless ``cross_attention=False``
    (Algorithm 8's decoder layer; without cross-attention Algorithm 10's layer). Arguments
    as `Block`'s."""

    causal = True

    def __init__(
        self, d_model: int, n_head: int, d_ff: int, *, cross_attention: bool = True, **options
    ) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=cross_attention, **options)


def run_blocks(
    blocks: nn.ModuleList,
    x: Tensor,
    mask: Tensor | None = None,
    *,
    memory: Tensor | None = None,
    memory_mask: Tensor | None = None,
    causal: bool | None = None,
    token_mask: Tensor | None = None,
    rope: tuple[Tensor, Tensor] | None = None,
    cache: DecoderCache | None = None,
    ln_final: nn.Module | None = None,
    checkpointing: bool = False,
    packing: TokenPacking | None = None,
    start: int = 0,
) -> Tensor:
    """The loop over the blocks, X^(l) = Block_l(X^(l-1)) for l = 1..L, then the final norm
    ``ln_final`` (None: none): x (B, T, C) -> (B, T, C). The one loop of every stack and model.

    ``start``: x is the stream entering block ``start`` (0-based), and only blocks
    start..L-1 run (activation patching resumes a cached run there, glassformer.circuits).

    ``causal``: None: each block's default (a DecoderBlock's self-attention is causal).
    ``cache``: a DecoderCache, one KVCache per block (and per cross-attention).
    ``checkpointing``: in training with gradients, each block's activations are not kept for
    the backward pass but recomputed there (memory for one block instead of L, at the cost of
    a second forward pass through every block).
    ``packing``: run the blocks on the N real tokens of the padded batch, (N, C)
    (glassformer.fast.packing chooses it): packed before the first block, unpacked after the
    final norm, zeros at the padding.
    """
    n = len(blocks)
    self_caches = [None] * n if cache is None else cache.self_attn
    cross_caches = [None] * n if cache is None or cache.cross_attn is None else cache.cross_attn
    if packing is not None:  # (B, T, C) -> (N, C); every token left is real
        x, token_mask = packing.pack(x), None
    recompute = checkpointing and blocks.training and torch.is_grad_enabled()
    if not 0 <= start <= n:
        raise ValueError(f"run_blocks: start={start} is out of range; the stack has {n} blocks")
    pairs = zip(blocks[start:], self_caches[start:], cross_caches[start:], strict=True)
    for block, c_self, c_cross in pairs:
        run = partial(checkpoint, block, use_reentrant=False) if recompute else block
        x = run(
            x,
            mask,
            memory=memory,
            memory_mask=memory_mask,
            causal=causal,
            token_mask=token_mask,
            rope=rope,
            cache=c_self,
            memory_cache=c_cross,
            packing=packing,
        )
    if ln_final is not None:
        x = ln_final(x, token_mask)
    return x if packing is None else packing.unpack(x)
