"""Multi-head attention: self-attention (Eq. 4) and cross-attention (Eq. 5), then Eq. (1).

    Q = Linear^Q(X),  K = Linear^K(Z),  V = Linear^V(Z)        (Z = X for self-attention)
    head_i = Attention(Q_i, K_i, V_i)                           (Eq. 1 on the i-th D columns)
    MultiHead(X, Z) = Concat(head_1, ..., head_H) W^O

The three projections are stacked in one matrix ``in_proj`` = [W^Q; W^K; W^V], as in
torch.nn.MultiheadAttention, so self-attention computes Q, K and V with one matmul.
Grouped-query attention: with ``n_kv_head`` < ``n_head`` there are fewer key/value heads, each
shared by ``n_head / n_kv_head`` consecutive query heads.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import attention, with_causal
from .kv_cache import KVCache
from .packing import Packing
from .positional import apply_rotary

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head self- or cross-attention with fused QKV, optional biases, GQA and KV cache."""

    # Inspection probe (glassformer.inspect.capture sets it on an instance): when not None,
    # the weights are computed explicitly and handed to recorder.attention with Q, K, V and
    # the mask as Eq. (1) applied it (causal part included). None: no cost.
    recorder = None

    def __init__(
        self,
        d_model: int,
        n_head: int,
        *,
        n_kv_head: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        n_kv_head = n_head if n_kv_head is None else n_kv_head
        if n_head < 1 or d_model % n_head:
            raise ValueError(
                f"d_model={d_model} must be divisible by n_head={n_head} (a positive int)"
            )
        if n_kv_head < 1 or n_head % n_kv_head:
            raise ValueError(
                f"n_head={n_head} must be divisible by n_kv_head={n_kv_head} (a positive int "
                "<= n_head)"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.n_head, self.n_kv_head, self.head_dim = n_head, n_kv_head, d_model // n_head
        self.dropout = dropout
        d_q, d_kv = n_head * self.head_dim, n_kv_head * self.head_dim
        self.in_proj = nn.Linear(d_model, d_q + 2 * d_kv, bias=bias)  # [W^Q; W^K; W^V]
        self.out_proj = nn.Linear(d_q, d_model, bias=bias)  # W^O

    def forward(
        self,
        x: Tensor,
        z: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        rope: tuple[Tensor, Tensor] | None = None,
        cache: KVCache | None = None,
        need_weights: bool = False,
        packing: Packing | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from x (B, T, C) to z (B, S, C), or to x itself when z is None.

        mask: bool (True = may attend) or additive float, broadcastable to (B, H, T, S).
        causal: apply the causal mask (self-attention; bottom-right aligned with a cache).
        rope: (cos, sin) tables for the T new positions; rotates q and k (self-attention only).
        cache: self-attention appends the new keys/values and attends to all cached ones;
            cross-attention computes the source's keys/values on the first call and reuses them.
        packing: self-attention on the packed real tokens x (N, C) of a padded batch (see
            packing.py): the projections run on them alone; returns y (N, C).
        Returns (y (B, T, C), weights (B, H, T, S) if need_weights else None).
        """
        b, t = (packing.batch, packing.length) if packing is not None else x.shape[:2]
        h, h_kv, d = self.n_head, self.n_kv_head, self.head_dim
        if z is None:  # self-attention, Eq. (4): one matmul for [Q K V]
            qkv = self.in_proj(x)  # (B, T, 3C), or (N, 3C) packed
            if packing is not None:
                qkv = packing.unpack(qkv)  # (B, T, 3C), zeros at the padding
            q, k, v = qkv.split([h * d, h_kv * d, h_kv * d], dim=-1)
            q, k, v = self._heads(q, h), self._heads(k, h_kv), self._heads(v, h_kv)
            if rope is not None:
                q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H_kv, S, D), S = cached + T
        else:  # cross-attention, Eq. (5): Q from X, K and V from Z
            w, bias = self.in_proj.weight, self.in_proj.bias
            q = self._heads(F.linear(x, w[: h * d], None if bias is None else bias[: h * d]), h)
            if cache is not None and cache.length:  # the source's K, V from an earlier step
                k, v = cache.keys, cache.values
            else:
                kv = F.linear(z, w[h * d :], None if bias is None else bias[h * d :])
                k, v = (self._heads(u, h_kv) for u in kv.chunk(2, dim=-1))  # (B, H_kv, S, D)
                if cache is not None:
                    cache.append(k, v)
        p = self.dropout if self.training else 0.0
        if self.recorder is not None:
            mask = with_causal(mask, causal, t, k.shape[2], q.device)  # what Eq. (1) applies
            y, a = attention(q, k, v, mask, p, need_weights=True)
            self.recorder.attention(q, k, v, mask, a, causal=causal)
            weights = a if need_weights else None
        else:
            y, weights = attention(q, k, v, mask, p, causal=causal, need_weights=need_weights)
        y = y.transpose(1, 2).reshape(b, t, h * d)  # (B, T, C): heads concatenated
        if packing is not None:
            y = packing.pack(y)  # (N, C)
        return self.out_proj(y), weights

    def projection_weights(self) -> tuple[tuple[Tensor, Tensor | None], ...]:
        """((W^Q, b^Q), (W^K, b^K), (W^V, b^V)) as views of ``in_proj``."""
        d_q, d_kv = self.n_head * self.head_dim, self.n_kv_head * self.head_dim
        ws = self.in_proj.weight.split([d_q, d_kv, d_kv])
        bias = self.in_proj.bias
        bs = (None,) * 3 if bias is None else bias.split([d_q, d_kv, d_kv])
        return tuple(zip(ws, bs, strict=True))

    def _heads(self, u: Tensor, n: int) -> Tensor:
        b, t, _ = u.shape
        return u.view(b, t, n, self.head_dim).transpose(1, 2)  # (B, n, T, D)
