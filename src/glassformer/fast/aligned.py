"""Vocabulary-sized matrices with rows padded to a multiple of 64 floats: the same numbers,
laid out so that the CPU matmul runs at full speed.

The logits (N, V) are a language model's largest tensor, and their gradient the second. When
V is not a multiple of 64 (GPT-2's 50257), the matmuls that write or read them with rows of V
floats ran much slower here (2 threads, N = 1024, C = 768): h W_uᵀ took 720 ms instead of
490 ms, the weight gradient gᵀh 500 ms instead of 440 ms. Both tensors are therefore written
into buffers whose rows hold V' = V rounded up to 64 floats and handed on as (N, V) strided
views; the padding is never read.

    linear(h, W, b)              logits = h Wᵀ + b                       (the unembedding)
    cross_entropy_sum(z, y, i)   Σ_n [log Σ_v e^{z_nv} − z_{n,y_n}] over y_n ≠ i, with
                                 ∂/∂z_nv = softmax(z_n)_v − [v = y_n], written aligned

``pays(x, v)`` says when they apply: float32 on CPU, V ≥ 1024 and not a multiple of 64,
at least 64 rows, eager mode without autocast. ``unembed`` and ``summed_cross_entropy`` are
what a model with the fast paths on calls (Unembedding's ``linear``, the models' loss): the
aligned form where it applies, F.linear and F.cross_entropy, the same values, elsewhere.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["ROW_ALIGN", "cross_entropy_sum", "linear", "pays", "summed_cross_entropy", "unembed"]

ROW_ALIGN = 64


def pays(x: Tensor, v: int) -> bool:
    """Use the aligned path for ``x`` (..., C or V) and a vocabulary of ``v``?"""
    return (
        x.device.type == "cpu"
        and x.dtype == torch.float32
        and v >= 1024
        and v % ROW_ALIGN != 0
        and x.numel() >= 64 * x.shape[-1]
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
    )


def _empty(n: int, v: int, like: Tensor) -> Tensor:
    """An uninitialised (n, v) view into rows of v rounded up to ROW_ALIGN."""
    return like.new_empty(n, -(-v // ROW_ALIGN) * ROW_ALIGN)[:, :v]


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        x = h.reshape(-1, h.shape[-1])  # (N, C)
        out = _empty(x.shape[0], w.shape[0], x)  # (N, V)
        if b is None:
            torch.mm(x, w.t(), out=out)
        else:
            torch.addmm(b, x, w.t(), out=out)
        ctx.save_for_backward(x, w)
        ctx.has_bias, ctx.h_shape = b is not None, h.shape
        return out.view(*h.shape[:-1], w.shape[0])  # (..., V), rows V' apart

    @staticmethod
    def backward(ctx, g: Tensor):
        x, w = ctx.saved_tensors
        g = g.reshape(-1, w.shape[0])  # (N, V)
        dh = (g @ w).view(ctx.h_shape) if ctx.needs_input_grad[0] else None  # (..., C)
        dw = g.t() @ x if ctx.needs_input_grad[1] else None  # (V, C)
        db = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return dh, dw, db


def linear(h: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """h (..., C), W (V, C), b (V,) -> h Wᵀ + b (..., V), as F.linear, rows aligned."""
    return _Linear.apply(h, w, b)


class _CrossEntropySum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z: Tensor, y: Tensor, ignore_index: int) -> Tensor:
        scored = y != ignore_index  # (N,)
        target = y.clamp(min=0)
        lse = torch.logsumexp(z, dim=-1)  # (N,): log Z_n
        picked = z.gather(1, target[:, None]).squeeze(1)  # (N,): z_{n, y_n}
        ctx.save_for_backward(z, lse, target, scored)
        return torch.where(scored, lse - picked, 0.0).sum()

    @staticmethod
    def backward(ctx, g: Tensor):
        z, lse, target, scored = ctx.saved_tensors
        grad = _empty(*z.shape, z)  # (N, V)
        torch.sub(z, lse[:, None], out=grad).exp_()  # softmax(z_n) = e^{z_n − log Z_n}
        scale = (g * scored).to(grad.dtype)[:, None]  # (N, 1): 0 for unscored rows
        grad.mul_(scale).scatter_add_(1, target[:, None], -scale)  # − 1 at the label
        return grad, None, None


def cross_entropy_sum(z: Tensor, y: Tensor, ignore_index: int) -> Tensor:
    """z (N, V) logits, y (N,) labels in [0, V) or ``ignore_index`` (not scored) -> the
    summed cross-entropy, as ``F.cross_entropy(z, y, ignore_index=..., reduction="sum")``."""
    bad = (y >= z.shape[-1]) | ((y < 0) & (y != ignore_index))
    if bool(bad.any()):
        raise ValueError(
            f"labels must be in [0, {z.shape[-1]}) or {ignore_index} (not scored); got "
            f"{int(y[bad][0])}"
        )
    return _CrossEntropySum.apply(z, y, ignore_index)


def unembed(h: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """h Wᵀ + b, rows aligned where that pays (``pays``), else F.linear."""
    if pays(h, w.shape[0]):
        return linear(h, w, b)
    return F.linear(h, w, b)


def summed_cross_entropy(z: Tensor, y: Tensor, ignore_index: int) -> Tensor:
    """The summed cross-entropy of z (N, V) against y (N,), its gradient aligned where that
    pays (``pays``), else F.cross_entropy's."""
    if pays(z, z.shape[-1]):
        return cross_entropy_sum(z, y, ignore_index)
    return F.cross_entropy(z, y, ignore_index=ignore_index, reduction="sum")
