"""Eq. (1) for short sequences in training: the scores held in memory, the backward written out.

    S = Q Kᵀ / √d_k + M            (B·H, T, S)   M = 0, or -inf above the diagonal (causal)
    A = Softmax(S)                 row-wise, Eqs. (2)-(3)
    Y = A V

and, given ∂L/∂Y = dY, the chain rule through each line (⊙ element-wise, Σ_m over a row):

    dV = Aᵀ dY
    dA = dY Vᵀ
    dS = A ⊙ (dA − Σ_m dA ⊙ A)     the softmax's Jacobian applied to dA
    dQ = dS K / √d_k,   dK = dSᵀ Q / √d_k

The flash kernel behind ``F.scaled_dot_product_attention`` never stores A; it works through
blocks of keys and, in the backward pass, recomputes them. On CPU that bookkeeping costs more
than it saves while A is small: with T = S ≤ 128 and at least 2048 query rows (B·H·T), forward
+ backward here took 0.7-0.9x the flash kernel's time (2 threads; the tiny GPT's (12, 4, 64,
32): 2.4 vs 3.0 ms a layer), and the tiny GPT's training step ran about 5% faster (same
process, interleaved). At T = 256 the two were even, at 1024 or with few rows flash was
faster, and without a gradient neither led across shapes (0.7x-1.4x), so ``pays`` sends only
short training sequences here. The cost: A, B·H·T·S numbers a layer, is kept for the
backward pass (3 MB a layer for the tiny GPT).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..nn.scaled_dot_product import fused_attention

__all__ = ["attention", "pays", "small_attention"]

MAX_LENGTH = 128  # T = S at most: beyond it the flash kernel is as fast
MIN_ROWS = 2048  # B·H·T at least: with fewer rows the batched matmuls are too small


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Eq. (1) as ``fused_attention`` computes it, short training sequences on CPU by
    ``small_attention``: MultiHeadAttention's ``attend`` with the fast paths on."""
    if pays(q, k, v, mask, dropout_p):
        return small_attention(q, k, v, causal=causal, scale=scale)
    return fused_attention(q, k, v, mask, dropout_p, causal=causal, scale=scale)


def pays(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float) -> bool:
    """Use ``small_attention`` for q (B, H, T, D), k, v (B, H_kv, S, D)? Only for training
    (a gradient is wanted) on CPU in float32/float64, eager mode without autocast, no mask
    other than the causal one, no dropout, as many key/value heads as query heads, and
    T = S ≤ MAX_LENGTH with B·H·T ≥ MIN_ROWS."""
    b, h, t, _ = q.shape
    return (
        torch.is_grad_enabled()
        and (q.requires_grad or k.requires_grad or v.requires_grad)
        and q.device.type == "cpu"
        and q.dtype in (torch.float32, torch.float64)
        and mask is None
        and dropout_p == 0.0
        and k.shape[1] == h
        and t == k.shape[2] <= MAX_LENGTH
        and b * h * t >= MIN_ROWS
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
    )


def small_attention(
    q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, scale: float | None = None
) -> Tensor:
    """q, k (B, H, T, D), v (B, H, T, D_v) -> Softmax(Q Kᵀ · scale + M) V (B, H, T, D_v),
    M the causal mask when ``causal``; scale defaults to 1/√D."""
    b, h, t, d = q.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    q3, k3, v3 = (u.reshape(b * h, t, u.shape[-1]) for u in (q, k, v))  # (BH, T, ·)
    return _SmallAttention.apply(q3, k3, v3, causal, scale).view(b, h, t, v.shape[-1])


class _SmallAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float) -> Tensor:
        """q, k (BH, T, D), v (BH, T, D_v) -> Y (BH, T, D_v)."""
        m = _mask(q.shape[1], q) if causal else q.new_zeros(())  # M (T, T), or a scalar 0
        s = torch.baddbmm(m, q, k.transpose(1, 2), beta=1.0 if causal else 0.0, alpha=scale)
        a = torch.softmax(s, dim=-1)  # (BH, T, T): A
        ctx.save_for_backward(q, k, v, a)
        ctx.scale, ctx.causal = scale, causal
        return torch.bmm(a, v)  # Y = A V

    @staticmethod
    def backward(ctx, dy: Tensor):
        q, k, v, a = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: ordinary ops, differentiable again
            needs = ctx.needs_input_grad[:3]
            return (*_recomputed_grads(q, k, v, dy, needs, ctx.causal, ctx.scale), None, None)
        dv = torch.bmm(a.transpose(1, 2), dy)  # dV = Aᵀ dY
        da = torch.baddbmm(dy.new_zeros(()), dy, v.transpose(1, 2), beta=0.0, alpha=ctx.scale)
        ds = torch._softmax_backward_data(da, a, -1, a.dtype)  # A ⊙ (dA − Σ_m dA ⊙ A), scaled
        dq = torch.bmm(ds, k)  # dS K / √d_k (the scale is already in dA)
        dk = torch.bmm(ds.transpose(1, 2), q)  # dSᵀ Q / √d_k
        return dq, dk, dv, None, None


def _mask(t: int, like: Tensor) -> Tensor:
    """The causal M (T, T): 0 on and below the diagonal, -inf above."""
    return torch.full((t, t), float("-inf"), dtype=like.dtype, device=like.device).triu_(1)


def _recomputed_grads(q, k, v, dy, needs, causal: bool, scale: float) -> tuple:
    """dQ, dK, dV (None where ``needs`` says no) through ordinary ops on the saved inputs, so
    that they can be differentiated again (gradients of gradients)."""
    s = torch.bmm(q, k.transpose(1, 2)) * scale
    if causal:
        s = s + _mask(s.shape[-1], s)
    y = torch.bmm(torch.softmax(s, dim=-1), v)
    wanted = [u for u, need in zip((q, k, v), needs, strict=True) if need]
    grads = iter(torch.autograd.grad(y, wanted, dy, create_graph=True))
    return tuple(next(grads) if need else None for need in needs)
