"""Transformer blocks: attention and feed-forward sub-layers, each wrapped in a residual
connection and a norm (notes: "Transformer Layers"; Vaswani et al. Fig. 1).

Residual connection around a sub-layer F, R(X) = F(X) + X, with the norm placed either
    post-norm (Vaswani et al., norm_first=False):  X ← Norm(X + Dropout(F(X)))
    pre-norm  (GPT-2 and the notes' pseudocode, norm_first=True):  X ← X + Dropout(F(Norm(X)))

EncoderBlock = self-attention + feed-forward (Algorithm 9's layer;
torch.nn.TransformerEncoderLayer).
DecoderBlock = masked self-attention + cross-attention to the encoder output Z + feed-forward
(Algorithm 8's decoder layer; torch.nn.TransformerDecoderLayer); with ``cross_attention=False``
it is the GPT layer of Algorithm 10 (DTransformer).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..graphs import AttentionGraph
from .feedforward import FeedForward
from .hooks import HookPoint
from .kv_cache import KVCache
from .multihead import MultiHeadAttention
from .norms import make_norm

__all__ = ["DecoderBlock", "EncoderBlock"]


class _Block(nn.Module):
    """The sub-layers of a block and the residual wrapper around each.

    Hook points (TransformerLens's names): ``hook_resid_pre`` the stream X entering the block,
    ``hook_attn_out`` / ``hook_cross_attn_out`` / ``hook_mlp_out`` what each sub-layer writes
    (F(Norm(X)) or F(X), after dropout), ``hook_resid_mid`` (and ``hook_resid_mid_cross``)
    the stream after attention (and cross-attention), ``hook_resid_post`` the block's output;
    each norm's output is its ``hook_normalized``. Public names: ``self_attn`` is ``attn``,
    the norms are ``ln1``, (``ln2`` before cross-attention,) then ``ln2`` or ``ln3`` before the
    feed-forward ``mlp``, as in TransformerLens's GPT-2 and T5 blocks.

    ``graph`` and ``cross_graph``: the attention graphs (glassformer.graphs) of the block's
    self- and cross-attention, None for every key (Transformers as GNNs: each layer may use
    its own graph).
    """

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
        bias: bool = True,
        eps: float = 1e-5,
        graph: AttentionGraph | None = None,
        cross_graph: AttentionGraph | None = None,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.graph, self.cross_graph = graph, cross_graph  # None: every key (a complete graph)
        p_attn = dropout if attn_dropout is None else attn_dropout
        attn = dict(n_kv_head=n_kv_head, bias=bias, dropout=p_attn)
        self.hook_resid_pre = HookPoint()
        self.self_attn = MultiHeadAttention(d_model, n_head, **attn)
        self.attn_norm = make_norm(norm, d_model, eps, bias)
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.cross_attn = self.cross_norm = None
        self.hook_aliases = {"self_attn": "attn", "attn_norm": "ln1", "ffn": "mlp"}
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_head, **attn)
            self.cross_norm = make_norm(norm, d_model, eps, bias)
            self.hook_cross_attn_out = HookPoint()
            self.hook_resid_mid_cross = HookPoint()
            self.hook_aliases.update(cross_norm="ln2", ff_norm="ln3")
        else:
            self.hook_aliases.update(ff_norm="ln2")
        self.ffn = FeedForward(d_model, d_ff, activation, bias=bias, dropout=dropout)
        self.ff_norm = make_norm(norm, d_model, eps, bias)
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()
        self.dropout = nn.Dropout(dropout)
        self.add = torch.add  # X + F(·) (see glassformer.fast for the in-place form)

    def residual(self, x: Tensor, norm: nn.Module, sublayer, hook: HookPoint, token_mask) -> Tensor:
        """One sub-layer F inside its residual connection:
        pre-norm X + F(Norm(X)), post-norm Norm(X + F(X)); ``hook`` sees what F writes."""
        if self.norm_first:
            return self._add(x, hook(self._drop(sublayer(norm(x, token_mask)))), hook)
        return norm(self._add(x, hook(self._drop(sublayer(x))), hook), token_mask)

    def _add(self, x: Tensor, update: Tensor, hook: HookPoint) -> Tensor:
        # a fast ``add`` may write over ``update``: never over a tensor a hook has seen
        return x + update if hook.active else self.add(x, update)

    def _drop(self, u: Tensor) -> Tensor:
        return self.dropout(u) if self.training else u  # the identity in eval mode


class EncoderBlock(_Block):
    """X ← R_attn(X) then X ← R_ff(X); bidirectional unless a mask or ``causal`` says otherwise."""

    def __init__(self, d_model: int, n_head: int, d_ff: int, **options) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=False, **options)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        packing=None,
    ) -> Tensor:
        """x (B, T, C); mask broadcastable to (B, H, T, T), True = may attend -> (B, T, C).
        With ``packing``, x holds the real tokens only, (N, C) -> (N, C)
        (glassformer.fast.packing)."""

        def attend(u: Tensor) -> Tensor:
            return self.self_attn(
                u, mask=mask, causal=causal, graph=self.graph, rope=rope, packing=packing
            )[0]

        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(
            self.residual(x, self.attn_norm, attend, self.hook_attn_out, token_mask)
        )
        return self.hook_resid_post(
            self.residual(x, self.ff_norm, self.ffn, self.hook_mlp_out, token_mask)
        )


class DecoderBlock(_Block):
    """Masked self-attention, then cross-attention to the memory Z (if ``cross_attention``),
    then feed-forward, each in a residual + norm wrapper."""

    def __init__(
        self, d_model: int, n_head: int, d_ff: int, *, cross_attention: bool = True, **options
    ) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=cross_attention, **options)

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
        cache: KVCache | None = None,
        memory_cache: KVCache | None = None,
    ) -> Tensor:
        """x (B, T, C), memory Z (B, S, C) -> (B, T, C).

        mask: extra self-attention mask (B, H, T, T_all) on top of the causal one;
        memory_mask: cross-attention mask broadcastable to (B, H, T, S);
        cache / memory_cache: KV caches for self- and cross-attention (incremental decoding).
        """
        if (memory is None) != (self.cross_attn is None):
            raise ValueError(
                "DecoderBlock: pass memory exactly when the block has cross-attention "
                f"(cross_attention={self.cross_attn is not None}, "
                f"memory given={memory is not None})"
            )

        def attend(u: Tensor) -> Tensor:
            return self.self_attn(
                u, mask=mask, causal=causal, graph=self.graph, rope=rope, cache=cache
            )[0]

        def attend_memory(u: Tensor) -> Tensor:
            q0 = 0 if cache is None else cache.position - u.shape[1]  # target positions
            return self.cross_attn(
                u, memory, memory_mask, graph=self.cross_graph, query_start=q0, cache=memory_cache
            )[0]

        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(
            self.residual(x, self.attn_norm, attend, self.hook_attn_out, token_mask)
        )
        if self.cross_attn is not None:
            x = self.hook_resid_mid_cross(
                self.residual(
                    x, self.cross_norm, attend_memory, self.hook_cross_attn_out, token_mask
                )
            )
        return self.hook_resid_post(
            self.residual(x, self.ff_norm, self.ffn, self.hook_mlp_out, token_mask)
        )
