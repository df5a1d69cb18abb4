"""Multi-head attention, read top to bottom as the notes write it: the projections of
self-attention (Eq. 4) or cross-attention (Eq. 5), then Eq. (1) on every head, then W^O.

    Q = Linear^Q(X),  K = Linear^K(Z),  V = Linear^V(Z)        (Z = X for self-attention)
    â = Q Kᵀ / √d_k + b                                         (Eq. 2, the mask b)
    A = softmax(â) row by row                                   (Eq. 3)
    head_i = A V                                                (Eq. 1 on the i-th D columns)
    MultiHead(X, Z) = Concat(head_1, ..., head_H) W^O

Each projection is its own nn.Linear, always called (torch.nn.MultiheadAttention's and Hugging
Face's names): ``q_proj`` = W^Q, ``k_proj`` = W^K, ``v_proj`` = W^V, ``out_proj`` = W^O;
self-attention computes q_proj(x), k_proj(x), v_proj(x), cross-attention q_proj(x), k_proj(z),
v_proj(z), so an adapter wrapped around one projection (LoRA on W^Q and W^V alone) is used
everywhere. Grouped-query attention: with ``n_kv_head`` < ``n_head`` there are fewer key/value
heads (``k_proj`` and ``v_proj`` have n_kv_head·D rows), each shared by ``n_head / n_kv_head``
consecutive query heads.
``attention_scores`` ("Formal Algorithms for Transformers", "Self-Attention across the
sequence"; nn/qk_projections.py):
"separate" W^Q and W^K as above (xᵀ U_qᵀ U_k x′ = q · k′), "shared" one W^{QK} for both (xᵀ Uᵀ U x′,
``qk_proj`` and ``v_proj``), "dot" none (xᵀ x′, q = k = x, ``v_proj`` only).

``forward`` computes Eq. (1) by one of three kernels, which give the same z (B, H, T, D_v),
zeros for a query row with nothing to attend to; ``written_out`` chooses:

    written out   Eqs. (2), (3), (1) inline in ``forward`` (nn/scaled_dot_product.py's
                  ``scores``, ``pattern``, ``weighted_sum``), with a hook point on the mask,
                  the scores â and the weights A: when a hook reads one of them or the caller
                  asks for A (``need_weights``);
    graph         ``graph_attention`` (nn/graph_attention.py; glassformer.graphs.kernel_for
                  picks its kernel): when a graph is given;
    fused         ``torch.nn.functional.scaled_dot_product_attention``, which never forms A,
                  called from ``forward`` as ``fused_arguments`` says: otherwise.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..graphs import AttentionGraph
from .arguments import TokenPacking, fraction, positive_int
from .graph_attention import graph_attention, graph_mask, with_edges
from .hooks import HookPoint
from .kv_cache import KVCache
from .lora import effective_weight
from .positional import apply_rotary
from .qk_projections import check_scores, projection_rows, projection_weights
from .scaled_dot_product import (
    check_mask,
    expanded_mask,
    fused_arguments,
    pattern,
    scores,
    weighted_sum,
    with_causal,
)

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head self- or cross-attention with separate W^Q, W^K, W^V, optional biases, GQA and
    KV cache.

    Hook points (TransformerLens's names and layouts): ``hook_q``, ``hook_k``, ``hook_v``
    (B, T, H, D) the projections of Eqs. (4)/(5), for the new positions only under a KV cache;
    ``hook_rot_q``, ``hook_rot_k`` (B, T, H, D) after the rotary rotation; ``hook_keys``,
    ``hook_values`` (B, S, H_kv, D) every key and value the queries attend to, the cached ones
    included (glassformer's own: without a cache the same as hook_k, hook_v); ``hook_mask``
    (B, H, T, S) the mask Eq. (1) applies, causal part included (bool, True = may attend, or
    an additive float mask); ``hook_attn_scores`` (B, H, T, S) â = a + b, Eq. (2) with the mask;
    ``hook_pattern`` (B, H, T, S) the weights A, Eq. (3), before dropout; ``hook_z``
    (B, T, H, D) each head's weighted sum Σ_m A_nm v_m; ``hook_result`` (B, T, H, C) each
    head's term z_h W^O_h, which sum (with b^O) to the output. The written-out path runs only
    when a hook reads the mask, the scores or the pattern (or ``need_weights``); ``hook_result``
    is computed only when a hook reads it. Otherwise torch's fused kernel runs, which never
    forms A, or a graph kernel when a graph is given (``written_out`` chooses).

    ``attention_scores``: "separate" (W^Q, W^K: score xᵀ U_qᵀ U_k x′), "shared" (one W^{QK}:
    xᵀ Uᵀ U x′) or "dot" (no parameters: xᵀ x′), "Formal Algorithms for Transformers",
    "Self-Attention across the sequence"; the last two give symmetric scores and need
    ``n_kv_head`` = ``n_head``.

    Args:
        d_model: the model width C (the notes' D); the head size is d_model / n_head.
        n_head: the number of query heads H; it must divide d_model.
        n_kv_head: key/value heads (grouped-query attention); it must divide n_head.
            None: n_head.
        bias: biases on the projections (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``).
        dropout: dropout rate on the attention weights A (training only).
        attention_scores: "separate", "shared" or "dot" (above).

    Raises:
        ValueError: a size that is not a positive int, d_model not divisible by n_head,
            n_head not divisible by n_kv_head, a dropout outside [0, 1), an unknown
            ``attention_scores``.

    Examples:
        >>> import torch
        >>> from glassformer.nn import MultiHeadAttention
        >>> attn = MultiHeadAttention(d_model=16, n_head=4)
        >>> x = torch.randn(2, 5, 16)
        >>> attn(x, causal=True).shape
        torch.Size([2, 5, 16])
        >>> y, weights = attn(x, causal=True, need_weights=True)
        >>> weights.shape
        torch.Size([2, 4, 5, 5])
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        *,
        n_kv_head: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        attention_scores: str = "separate",
    ) -> None:
        super().__init__()
        who = "MultiHeadAttention"
        d_model, n_head = positive_int(who, "d_model", d_model), positive_int(who, "n_head", n_head)
        n_kv_head = n_head if n_kv_head is None else positive_int(who, "n_kv_head", n_kv_head)
        if d_model % n_head:
            raise ValueError(
                f"{who}: d_model={d_model} must be divisible by n_head={n_head} (the head size "
                f"is d_model / n_head); allowed n_head: the divisors of {d_model}"
            )
        if n_head % n_kv_head:
            raise ValueError(
                f"{who}: n_head={n_head} must be divisible by n_kv_head={n_kv_head} (a positive "
                "int <= n_head)"
            )
        dropout = fraction(who, "dropout", dropout)
        self.scores = check_scores(who, attention_scores, n_head, n_kv_head)
        self.d_model = d_model
        self.n_head, self.n_kv_head, self.head_dim = n_head, n_kv_head, d_model // n_head
        self.dropout = dropout
        d_q, d_kv = n_head * self.head_dim, n_kv_head * self.head_dim
        for name, rows in projection_rows(self.scores, d_q, d_kv).items():
            setattr(self, name, nn.Linear(d_model, rows, bias=bias))  # W^Q, W^K, W^V ...
        self.out_proj = nn.Linear(d_q, d_model, bias=bias)  # W^O
        for name in _HOOKS:
            setattr(self, name, HookPoint())

    def extra_repr(self) -> str:
        return "" if self.scores == "separate" else f"attention_scores={self.scores!r}"

    def forward(
        self,
        x: Tensor,
        z: Tensor | None = None,
        mask: Tensor | AttentionGraph | None = None,
        *,
        causal: bool = False,
        graph: AttentionGraph | None = None,
        query_start: int | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        cache: KVCache | None = None,
        packing: TokenPacking | None = None,
        need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Attend from x (B, T, C) to z (B, S, C), or to x itself when z is None.

        Args:
            x: (B, T, C) the queries' sequence X.
            z: (B, S, C) the keys' and values' sequence Z (cross-attention, Eq. 5); None:
                self-attention (Eq. 4), Z = X.
            mask: bool (True = may attend) or additive float, broadcastable to (B, H, T, S);
                or an AttentionGraph (the same as ``graph=mask``).
            causal: apply the causal mask (self-attention; bottom-right aligned with a cache).
            graph: attend only along the edges of this glassformer.graphs graph (Transformers
                as GNNs), on top of ``mask``; the cost follows the edges
                (nn/graph_attention.py).
            query_start: the position of the first query on the graph (cross-attention: the
                target position; self-attention: the last T of the keys, the default).
            rope: (cos, sin) tables for the T new positions; rotates q and k (self-attention
                only).
            cache: self-attention appends the new keys/values and attends to all cached ones;
                cross-attention computes the source's keys/values on the first call and
                reuses them.
            packing: x holds the N real tokens of a padded batch alone, (N, C)
                (glassformer.fast.packing): the projections run on them, Eq. (1) on the
                (B, T) layout (self-attention, no hook attached).
            need_weights: also return the attention weights A (runs the written-out path).

        Returns:
            y (B, T, C) ((N, C) under ``packing``); (y, A (B, H, T, S)) if need_weights.
        """
        if isinstance(mask, AttentionGraph):
            mask, graph = None, (mask if graph is None else graph & mask)
        self._check_inputs(x, z, packing)
        q, k, v = self._project(x, z, rope, cache, packing)  # (B, H, T, D), (B, H_kv, S, D)
        k, v = _hooked(self.hook_keys, k), _hooked(self.hook_values, v)  # all S, cached too
        key_start, mask = self._cached_keys(mask, k, z, cache)
        query_start = 0 if query_start is None and z is not None else query_start
        t, s = q.shape[2], k.shape[2]
        if mask is not None:
            check_mask(mask, (q.shape[0], self.n_head, t, s), "MultiHeadAttention")
        p = self.dropout if self.training else 0.0
        weights = None
        if self.written_out(need_weights):  # Eq. (1) written out, every step hooked
            mask = with_causal(mask, causal, t, s, q.device)
            if graph is not None:  # the graph's edges as a (T, S) mask
                edges = graph_mask(graph, t, s, key_start=key_start, query_start=query_start,
                                   causal=causal)  # fmt: skip
                mask = with_edges(mask, edges.to(q.device))
            if self.hook_mask.active:
                mask = self.hook_mask(expanded_mask(mask, q, k))  # (B, H, T, S)
            a = self.hook_attn_scores(scores(q, k, mask))  # â = QKᵀ/√d_k + b (Eq. 2)
            weights = self.hook_pattern(pattern(a))  # A = softmax(â) (Eq. 3)
            y = weighted_sum(weights, v, p)  # (B, H, T, D): Σ_m A_nm v_m (Eq. 1)
        elif graph is not None:  # Eq. (1) over the graph's edges only
            y = graph_attention(q, k, v, graph, mask, p, causal=causal, key_start=key_start,
                                query_start=query_start)  # fmt: skip
        else:  # Eq. (1) by torch's fused kernel, which never forms A
            attn_mask, is_causal, dead = fused_arguments(q, k, mask, causal)
            gqa = self.n_kv_head != self.n_head
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask, dropout_p=p, is_causal=is_causal, enable_gqa=gqa
            )  # (B, H, T, D)
            y = y if dead is None else y.masked_fill(dead, 0.0)  # a row that sees no key: 0
        y = self._output(self.hook_z(y.transpose(1, 2)), packing)  # (B, T, H, D) -> (B, T, C)
        return (y, weights) if need_weights else y

    def written_out(self, need_weights: bool = False) -> bool:
        """The kernel choice: Eqs. (2), (3), (1) written out when the caller asks for A or a
        hook reads the mask, the scores or the pattern; otherwise a kernel that never forms A
        (fused, or the graph's)."""
        return (
            need_weights
            or self.hook_mask.active
            or self.hook_attn_scores.active
            or self.hook_pattern.active
        )

    @staticmethod
    def _cached_keys(mask, k: Tensor, z: Tensor | None, cache: KVCache | None):
        """(the first key's position, the mask on the keys kept). A rolling cache returns the
        keys it kept before this step and the new ones, then keeps the latest ``window`` (its
        ``position`` moves past them); a mask over every position loses the keys it dropped."""
        start = 0 if cache is None or z is not None else cache.position - k.shape[2]
        if start and isinstance(mask, Tensor) and mask.shape[-1] > k.shape[2]:
            mask = mask[..., -k.shape[2] :]
        return start, mask

    def _check_inputs(self, x: Tensor, z: Tensor | None, packing: TokenPacking | None) -> None:
        """Refuse inputs of the wrong rank or width (shapes only: Python ints)."""
        c = self.d_model
        if x.dim() != (3 if packing is None else 2) or x.shape[-1] != c:
            raise ValueError(
                f"MultiHeadAttention: x must be (B, T, C) with C = d_model = {c}; got shape "
                f"{tuple(x.shape)}"
            )
        if z is not None and (z.dim() != 3 or z.shape[-1] != c or z.shape[0] != x.shape[0]):
            raise ValueError(
                f"MultiHeadAttention: z must be (B, S, C) with B = {x.shape[0]} (x's batch) and "
                f"C = d_model = {c}; got shape {tuple(z.shape)}"
            )

    def _project(self, x, z, rope, cache, packing) -> tuple[Tensor, Tensor, Tensor]:
        """Q, K, V (Eq. 4 for self-attention, Eq. 5 for cross-attention), split into heads:
        q (B, H, T, D), k and v (B, H_kv, S, D), with the cached positions."""
        h, h_kv = self.n_head, self.n_kv_head
        if z is not None and cache is not None and cache.length:  # the source's K, V: cached
            return self._heads(self.hook_q, self.queries(x), h), cache.keys, cache.values
        q, k, v = self.projections(x, z, packing)  # (B, T, H D), (B, S, H_kv D) twice
        q, k = self._heads(self.hook_q, q, h), self._heads(self.hook_k, k, h_kv)
        v = self._heads(self.hook_v, v, h_kv)
        if z is not None:  # cross-attention, Eq. (5): the source's K, V kept for later steps
            if cache is not None:
                cache.append(k, v)
            return q, k, v
        if rope is not None:  # RoPE: rotate each query and key by its position's angles
            q = _hooked(self.hook_rot_q, apply_rotary(q, *rope))
            k = _hooked(self.hook_rot_k, apply_rotary(k, *rope))
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_kv, S, D), S = cached + T
        return q, k, v

    def projections(
        self, x: Tensor, z: Tensor | None = None, packing: TokenPacking | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q of the tokens x (..., C), K and V of the tokens z (x when None), flat: (..., H·D),
        (..., H_kv·D) twice (Eq. 4, or Eq. 5 with z). Each projection is its module, called:
        ``q_proj(x)``, ``k_proj(z)``, ``v_proj(z)``; "shared" ``qk_proj`` for both q and k
        (one tensor for self-attention), "dot" q = x and k = z. ``packing``: x holds the N real
        tokens of a (B, T) batch, (N, C) (self-attention); Q, K, V come back as (B, T, ·),
        zeros at the padding."""
        place = (lambda u: u) if packing is None else packing.unpack
        q = place(self.queries(x))
        if z is None:  # self-attention: keys and values of the same tokens
            k = q if self.scores != "separate" else place(self.k_proj(x))
            return q, k, place(self.v_proj(x))
        return q, self.keys(z), self.v_proj(z)

    def queries(self, x: Tensor) -> Tensor:
        """Q of the tokens x (..., C), flat (..., H·D): W^Q, W^{QK} ("shared") or x ("dot")."""
        if self.scores == "separate":
            return self.q_proj(x)
        return self.qk_proj(x) if self.scores == "shared" else x.contiguous()

    def keys(self, z: Tensor) -> Tensor:
        """K of the tokens z (..., C), flat (..., H_kv·D): W^K, W^{QK} ("shared") or z ("dot")."""
        if self.scores == "separate":
            return self.k_proj(z)
        return self.qk_proj(z) if self.scores == "shared" else z.contiguous()

    def _output(self, z: Tensor, packing: TokenPacking | None = None) -> Tensor:
        """MultiHead = Concat(head_1, ..., head_H) W^O + b^O, z (B, T, H, D) -> (B, T, C)
        ((N, C) under ``packing``)."""
        b, t, h, d = z.shape
        if packing is not None:  # W^O on the real tokens only
            return self.out_proj(packing.pack(z.reshape(b, t, h * d)))  # (N, C)
        if self.hook_result.active:  # the same sum, one term per head: Σ_h z_h W^O_h + b^O
            w = effective_weight(self.out_proj).view(-1, h, d)  # (C, H, D): W^O by head
            result = self.hook_result(torch.einsum("bthd,chd->bthc", z, w))  # (B, T, H, C)
            out = result.sum(2)
            return out if self.out_proj.bias is None else out + self.out_proj.bias
        return self.out_proj(z.reshape(b, t, h * d))  # (B, T, C): heads side by side

    def projection_weights(self) -> tuple[tuple[Tensor, Tensor | None], ...]:
        """((W^Q, b^Q), (W^K, b^K), (W^V, b^V)), each W (rows, C): the projections' own
        ``weight`` and ``bias`` ("shared": W^{QK} twice; "dot": the identity, no bias, twice)."""
        return projection_weights(self)

    def _heads(self, hook: HookPoint, u: Tensor, n: int) -> Tensor:
        """(B, T, n·D) -> hooked as (B, T, n, D) -> (B, n, T, D): one row per position, per head."""
        b, t, _ = u.shape
        return hook(u.view(b, t, n, self.head_dim)).transpose(1, 2)


_HOOKS = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k", "hook_keys", "hook_values",
          "hook_mask", "hook_attn_scores", "hook_pattern", "hook_z", "hook_result")  # fmt: skip


def _hooked(hook: HookPoint, u: Tensor) -> Tensor:
    """Pass u (B, n, T, D) through ``hook`` in TransformerLens's layout (B, T, n, D)."""
    return hook(u.transpose(1, 2)).transpose(1, 2) if hook.active else u
