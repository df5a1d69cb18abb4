"""Scaled dot-product attention, Eq. (1) of the notes:

    Attention(Q, K, V) = Softmax(Q Kᵀ / √d_k) V                                   (1)
    a_nm = q_nᵀ k_m / √d_k                                                          (2)
    y_n  = (1 / Z_n) Σ_m e^{a_nm} v_m,   Z_n = Σ_m e^{a_nm}                         (3)

with a mask b added to the scores (â_nm = a_nm + b_nm, b_nm ∈ {0, -inf}) so that the sum in
Eq. (3) only runs over the keys a query may attend to.

Notation used across glassformer.nn:
    B batch, T query (target) length, S key (source) length, C = d_model,
    H query heads, G = H / H_kv queries per key/value head, D head size (d_k), N_V vocabulary size.

Two paths compute the same function:
  * written out (``scores``, ``pattern``, ``weighted_sum``): the scores, the mask, the softmax
    and the weighted sum, each a tensor one can look at; MultiHeadAttention.forward runs them
    inline, with a hook point between each, when a hook reads the mask, the scores or the
    pattern A, or the caller asks for A;
  * fused: ``torch.nn.functional.scaled_dot_product_attention``, which never forms A (flash /
    memory-efficient kernels), the default; ``fused_arguments`` is the one place that says how
    it is called for a mask (``fused_attention`` and MultiHeadAttention.forward call it so).
All return zeros, never NaN, for a query row with nothing to attend to. ``attention`` is the
functional form (no module, no hooks): the written-out path with ``need_weights``, else fused.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .masks import causal_mask

__all__ = [
    "attention",
    "check_mask",
    "expanded_mask",
    "fused_arguments",
    "fused_attention",
    "pattern",
    "scores",
    "weighted_sum",
    "with_causal",
]


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    causal: bool = False,
    need_weights: bool = True,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Eq. (1) over heads: returns ``(output, weights)``.

    Args:
        q: (B, H, T, D) queries.
        k: (B, H_kv, S, D) keys; H_kv divides H (grouped-query attention when H_kv < H).
        v: (B, H_kv, S, D_v) values.
        mask: boolean, True = may attend, or float (added to the scores, -inf = masked);
            broadcastable to (B, H, T, S).
        dropout_p: dropout on the attention weights (pass 0.0 in eval mode).
        causal: also apply the causal mask; with S > T the queries are the last T positions
            (decoding with a KV cache).
        need_weights: True runs the explicit path and returns the weights A (B, H, T, S),
            before dropout; False runs the fused kernel and returns ``(output, None)``.
        scale: score scale, default 1/√D.

    Returns:
        output (B, H, T, D_v) and the weights (B, H, T, S) or None.
    """
    _check_inputs(q, k, v, mask)
    if not need_weights:
        return fused_attention(q, k, v, mask, dropout_p, causal=causal, scale=scale), None
    allowed = with_causal(mask, causal, q.shape[-2], k.shape[-2], q.device)
    weights = pattern(scores(q, k, allowed, scale))
    return weighted_sum(weights, v, dropout_p), weights


def scores(q: Tensor, k: Tensor, mask: Tensor | None = None, scale: float | None = None) -> Tensor:
    """â (B, H, T, S): a_nm = q_nᵀ k_m / √d_k (Eq. 2), plus the mask b_nm (0, or -inf where
    ``mask`` is False; a float mask is added as it is)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    a = (q @ _per_query_head(k, q).transpose(-2, -1)) * scale  # (B, H, T, S): Eq. (2)
    if mask is None:
        return a
    if mask.dtype == torch.bool:
        return a.masked_fill(~mask, float("-inf"))  # â_nm = a_nm + b_nm
    return a + mask


def pattern(scores: Tensor) -> Tensor:
    """A (B, H, T, S): A_nm = e^{â_nm} / Z_n, Z_n = Σ_m e^{â_nm}, the softmax of each row
    (Eq. 3); a row whose keys are all masked (-inf) is all zeros instead of 0/0."""
    dead = scores.isneginf().all(dim=-1, keepdim=True)  # (B, H, T, 1): nothing to see
    weights = scores.masked_fill(dead, 0.0).softmax(dim=-1)
    return weights.masked_fill(dead, 0.0)


def weighted_sum(weights: Tensor, v: Tensor, dropout_p: float = 0.0) -> Tensor:
    """z (B, H, T, D_v): z_n = Σ_m A_nm v_m (Eq. 1), with dropout on A in training."""
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    return weights @ _per_query_head(v, weights)


def _per_query_head(u: Tensor, q: Tensor) -> Tensor:
    """Grouped-query attention: each of the H_kv key/value heads of u (B, H_kv, S, ·) serves
    G = H / H_kv consecutive query heads -> (B, H, S, ·)."""
    g = q.shape[1] // u.shape[1]
    return u if g == 1 else u.repeat_interleave(g, dim=1)


def fused_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Eq. (1) by torch's fused kernel: the same z (B, H, T, D_v) as ``weighted_sum`` of the
    ``pattern`` of the ``scores``, without forming A."""
    attn_mask, is_causal, dead = fused_arguments(q, k, mask, causal)
    gqa = _gqa(q, k)
    z = F.scaled_dot_product_attention(
        q, k, v, attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=gqa
    )  # (B, H, T, D_v)
    return z if dead is None else z.masked_fill(dead, 0.0)


def fused_arguments(
    q: Tensor, k: Tensor, mask: Tensor | None, causal: bool
) -> tuple[Tensor | None, bool, Tensor | None]:
    """How torch's fused kernel computes Eq. (1) with this mask: (attn_mask, is_causal, dead).

    No mask and T = S: the kernel's own causal flag. Otherwise the causal mask folded into
    ``mask`` (bottom-right aligned for T < S). A row with nothing to attend to would make the
    kernel divide 0 by 0: such rows (``dead``, (..., T, 1)) attend everywhere (finite) and
    the caller zeroes their output, as ``pattern`` does."""
    t, s = q.shape[-2], k.shape[-2]
    if mask is None and causal and t == s:
        return None, True, None
    mask = with_causal(mask, causal, t, s, q.device)
    if mask is None:
        return None, False, None
    if mask.dtype == torch.bool:
        dead = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1)
        return mask | dead, False, dead
    mask = mask.to(q.dtype)
    dead = (mask == float("-inf")).all(dim=-1, keepdim=True)
    return mask.masked_fill(dead, 0.0), False, dead


def _gqa(q: Tensor, k: Tensor) -> bool:
    return q.shape[1] != k.shape[1]


def with_causal(mask, causal, t, s, device):
    """``mask`` with the causal mask folded in (bottom-right aligned for T < S), as Eq. (1)
    applies it."""
    if not causal or t == 1:  # a single newest query may see every key
        return mask
    tri = causal_mask(t, s, device=device)  # (T, S)
    if mask is None:
        return tri
    if mask.dtype == torch.bool:
        return mask & tri
    return mask.masked_fill(~tri, float("-inf"))


def _check_inputs(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            "attention: q, k, v must be 4-D (B, H, T, D), got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    b, h, t, d = q.shape
    if k.shape[0] != b or k.shape[-1] != d or k.shape[:3] != v.shape[:3]:
        raise ValueError(
            f"attention: k must be (B={b}, H_kv, S, D={d}) and v (B, H_kv, S, D_v) with the same "
            f"B, H_kv, S; got k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if h % k.shape[1] != 0:
        raise ValueError(
            f"attention: the {h} query heads must be a multiple of the {k.shape[1]} key/value heads"
        )
    if mask is not None:
        check_mask(mask, (b, h, t, k.shape[2]), "attention")


def check_mask(mask: Tensor, full: tuple[int, int, int, int], who: str) -> None:
    """Refuse a mask that is neither bool nor float, or that does not broadcast to ``full``
    = (B, H, T, S). Compares shapes only (Python ints): cheap enough for every forward pass."""
    dtype = mask.dtype
    if dtype is not torch.bool and not dtype.is_floating_point:
        raise ValueError(
            f"{who}: mask dtype {mask.dtype} is not allowed; use bool (True = may attend) "
            "or a float additive mask"
        )
    if not _broadcasts(mask.shape, full):
        raise ValueError(
            f"{who}: mask of shape {tuple(mask.shape)} does not broadcast to (B, H, T, S) = {full}"
        )


def _broadcasts(shape: tuple[int, ...], full: tuple[int, int, int, int]) -> bool:
    """Does ``shape`` broadcast to ``full`` (each size 1 or the same, aligned on the right)?"""
    skip = 4 - len(shape)
    if skip < 0:
        return False
    for i, n in enumerate(shape):  # noqa: SIM110 (a loop: faster than all() of a generator)
        if n != 1 and n != full[skip + i]:
            return False
    return True


def expanded_mask(mask: Tensor | None, q: Tensor, k: Tensor) -> Tensor:
    """The mask as (B, H, T, S) (a broadcast view); all True when there is none."""
    shape = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    full = torch.ones((), dtype=torch.bool, device=q.device) if mask is None else mask
    return full.expand(shape)
