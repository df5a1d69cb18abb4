"""Attention masks: which keys each query may attend to.

The notes add a mask matrix b to the scores before the softmax (b_nm = 0 where query n may
see key m, -inf where it may not), so that the sum in Eq. (3) runs only over allowed keys:

    causal mask   b_nm = 0 if m <= n else -inf       (y_n depends on x_1..x_n only)
    padding mask  b_nm = 0 if key m is a real token else -inf

glassformer keeps one convention inside: a **boolean** tensor, ``True`` = may attend,
broadcastable to (B, H, T, S). torch.nn's conventions (``True`` = masked, additive float
masks, ``key_padding_mask``) are converted at the boundary only (``glassformer.interop``).
A query row with nothing to attend to yields zeros, never NaN (see ``attention``).

Notation: B batch, H heads, T query length, S key length.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "causal_mask",
    "combine_masks",
    "cross_attention_mask",
    "padding_mask",
    "padding_mask_from_ids",
]


def causal_mask(t: int, s: int | None = None, *, device: torch.device | None = None) -> Tensor:
    """(T, S) boolean mask, True where key m <= query n.

    With ``s > t`` the T queries are the *last* T positions of the S keys (decoding with a
    KV cache): query i sits at absolute position s - t + i and sees keys 0..s - t + i.
    """
    s = t if s is None else s
    if t < 0 or s < t:
        raise ValueError(f"causal_mask: need 0 <= t <= s, got t={t}, s={s}")
    return torch.ones(t, s, dtype=torch.bool, device=device).tril(diagonal=s - t)  # (T, S)


def padding_mask(lengths: Tensor, max_len: int | None = None) -> Tensor:
    """(B, 1, 1, S) key mask from sequence lengths: True at the first ``lengths[b]`` keys."""
    if lengths.dim() != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise ValueError(
            f"padding_mask: lengths must be a 1-D integer tensor, got dtype={lengths.dtype} "
            f"shape={tuple(lengths.shape)}"
        )
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"padding_mask: lengths must be >= 0, got {lengths.tolist()}")
    s = int(lengths.max()) if max_len is None and lengths.numel() else (max_len or 0)
    keep = torch.arange(s, device=lengths.device) < lengths[:, None]  # (B, S)
    return keep[:, None, None, :]  # (B, 1, 1, S)


def padding_mask_from_ids(input_ids: Tensor, pad_id: int) -> Tensor:
    """(B, 1, 1, S) key mask from token ids: True where ``input_ids != pad_id``."""
    if input_ids.dim() != 2:
        raise ValueError(
            f"padding_mask_from_ids: input_ids must be (B, S), got shape {tuple(input_ids.shape)}"
        )
    return (input_ids != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def cross_attention_mask(key_mask: Tensor, query_mask: Tensor | None = None) -> Tensor:
    """(B, 1, T|1, S) mask for cross-attention (Eq. 5): queries from X, keys from Z.

    ``key_mask`` (B, S) marks the real tokens of the source Z; ``query_mask`` (B, T), if given,
    marks the real tokens of X, and padded queries then attend to nothing (their output is 0).
    """
    if key_mask.dim() != 2 or key_mask.dtype != torch.bool:
        raise ValueError(
            f"cross_attention_mask: key_mask must be a (B, S) bool tensor, got "
            f"dtype={key_mask.dtype} shape={tuple(key_mask.shape)}"
        )
    mask = key_mask[:, None, None, :]  # (B, 1, 1, S)
    if query_mask is not None:
        if query_mask.dim() != 2 or query_mask.dtype != torch.bool:
            raise ValueError(
                f"cross_attention_mask: query_mask must be a (B, T) bool tensor, got "
                f"dtype={query_mask.dtype} shape={tuple(query_mask.shape)}"
            )
        mask = mask & query_mask[:, None, :, None]  # (B, 1, T, S)
    return mask


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of boolean masks (None entries are skipped): a key is allowed only if
    every mask allows it. E.g. ``combine_masks(causal_mask(T), padding_mask(lengths))``."""
    out: Tensor | None = None
    for m in masks:
        if m is None:
            continue
        if m.dtype != torch.bool:
            raise ValueError(
                f"combine_masks: masks must be bool (True = may attend), got {m.dtype}"
            )
        out = m if out is None else out & m
    return out
