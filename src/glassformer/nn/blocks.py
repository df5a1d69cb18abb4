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

from collections.abc import Callable

from torch import Tensor, nn

from .feedforward import FeedForward
from .inplace import writable
from .kv_cache import KVCache
from .multihead import MultiHeadAttention
from .norms import make_norm
from .packing import Packing

__all__ = ["DecoderBlock", "EncoderBlock"]


class _Block(nn.Module):
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
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        p_attn = dropout if attn_dropout is None else attn_dropout
        attn = dict(n_kv_head=n_kv_head, bias=bias, dropout=p_attn)
        self.self_attn = MultiHeadAttention(d_model, n_head, **attn)
        self.attn_norm = make_norm(norm, d_model, eps, bias)
        self.cross_attn = self.cross_norm = None
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_head, **attn)
            self.cross_norm = make_norm(norm, d_model, eps, bias)
        self.ffn = FeedForward(d_model, d_ff, activation, bias=bias, dropout=dropout)
        self.ff_norm = make_norm(norm, d_model, eps, bias)
        self.dropout = nn.Dropout(dropout)

    # Inspection probe (glassformer.inspect.capture sets it on an instance): when not None,
    # each residual step is handed to recorder.residual(name, before, update, after).
    recorder = None

    def _residual(
        self,
        x: Tensor,
        norm: nn.Module,
        sublayer: Callable[[Tensor], Tensor],
        token_mask,
        name: str,
    ) -> Tensor:
        update = sublayer(norm(x, token_mask) if self.norm_first else x)
        if self.training:  # dropout is the identity in eval mode: skip the call
            update = self.dropout(update)
        out = self._add(x, update)  # X + F(Norm(X)) pre-norm, X + F(X) post-norm
        if not self.norm_first:
            out = norm(out, token_mask)  # Norm(X + F(X))
        if self.recorder is not None:
            self.recorder.residual(name, x, update, out)
        return out

    def _add(self, x: Tensor, update: Tensor) -> Tensor:
        """X + F(X); without a graph the sum overwrites F(X), a fresh tensor of the sub-layer
        (inplace.py), unless the inspection probe keeps it or autocast made it another dtype."""
        if writable(update) and self.recorder is None and update.dtype == x.dtype:
            return update.add_(x)
        return x + update


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
        packing: Packing | None = None,
    ) -> Tensor:
        """x (B, T, C); mask broadcastable to (B, H, T, T), True = may attend -> (B, T, C).
        With ``packing``, x holds the real tokens only, (N, C) -> (N, C) (see packing.py)."""

        def attend(u: Tensor) -> Tensor:
            return self.self_attn(u, mask=mask, causal=causal, rope=rope, packing=packing)[0]

        x = self._residual(x, self.attn_norm, attend, token_mask, "self_attn")
        return self._residual(x, self.ff_norm, self.ffn, token_mask, "ff")


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
            return self.self_attn(u, mask=mask, causal=causal, rope=rope, cache=cache)[0]

        def attend_memory(u: Tensor) -> Tensor:
            return self.cross_attn(u, memory, memory_mask, cache=memory_cache)[0]

        x = self._residual(x, self.attn_norm, attend, token_mask, "self_attn")
        if self.cross_attn is not None:
            x = self._residual(x, self.cross_norm, attend_memory, token_mask, "cross_attn")
        return self._residual(x, self.ff_norm, self.ffn, token_mask, "ff")
