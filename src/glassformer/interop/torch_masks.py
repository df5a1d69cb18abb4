"""torch.nn's call conventions, converted to glassformer's at the boundary.

torch.nn (``MultiheadAttention``, ``Transformer*``) and glassformer disagree on two things:

* **Masks.** torch.nn takes an ``attn_mask`` of shape (T, S) or (B·H, T, S) and a
  ``key_padding_mask`` of shape (B, S), each either boolean with ``True`` = *not* allowed, or
  float and *added* to the scores. glassformer takes one mask broadcastable to (B, H, T, S),
  boolean with ``True`` = *may attend*, or float and added to the scores.
* **Layout.** torch.nn is sequence-first, (T, B, C), unless ``batch_first=True``, and also
  accepts unbatched (T, C) inputs; glassformer is always (B, T, C).

Both masks are the b_nm of the notes (Eq. 1 with â_nm = a_nm + b_nm): a boolean mask says
b_nm ∈ {0, -inf}, a float mask gives b_nm directly. Two boolean masks combine by AND of what
they allow; as soon as one mask is float, both become additive and are summed, as torch does.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..nn.masks import causal_mask

__all__ = ["from_batch_first", "glassformer_mask", "resolve_causal", "to_batch_first"]


def to_batch_first(x: Tensor, batch_first: bool, name: str) -> tuple[Tensor, bool]:
    """(T, B, C), (B, T, C) or unbatched (T, C) -> ((B, T, C), batched)."""
    if x.is_nested:
        raise ValueError(f"{name}: nested tensors are not supported; pass a padded tensor")
    if x.dim() == 2:
        return x.unsqueeze(0), False  # (1, T, C): batch_first is ignored for unbatched input
    if x.dim() == 3:
        return (x if batch_first else x.transpose(0, 1)), True  # (B, T, C)
    raise ValueError(
        f"{name} must be 3-D ({'(B, T, C)' if batch_first else '(T, B, C)'}) or unbatched "
        f"2-D (T, C), got shape {tuple(x.shape)}"
    )


def from_batch_first(y: Tensor, batch_first: bool, batched: bool) -> Tensor:
    """Inverse of ``to_batch_first`` for an output (B, T, C)."""
    if not batched:
        return y.squeeze(0)  # (T, C)
    return y if batch_first else y.transpose(0, 1)  # (B, T, C) or (T, B, C)


def resolve_causal(
    is_causal: bool | None, attn_mask: Tensor | None, t: int, s: int, name: str
) -> bool:
    """Turn torch.nn's ``is_causal`` *hint* into glassformer's ``causal`` switch.

    In torch.nn ``is_causal=True`` promises that ``attn_mask`` is the causal mask (torch raises
    if no mask is given). When a mask is given we use the mask, which is what torch computes
    whenever the promise holds; without a mask we apply the causal mask ourselves, which needs
    T == S (torch's and glassformer's causal masks only agree on square masks).
    """
    if not is_causal or attn_mask is not None:
        return False
    if t != s:
        raise ValueError(
            f"{name}=True without a mask needs as many queries as keys, got T={t}, S={s}; "
            "pass the causal mask you mean as the mask"
        )
    return True


def glassformer_mask(
    attn_mask: Tensor | None,
    key_padding_mask: Tensor | None,
    shape: tuple[int, int, int, int],
    *,
    batched: bool,
    dtype: torch.dtype,
    causal: bool = False,
    names: tuple[str, str] = ("attn_mask", "key_padding_mask"),
) -> Tensor | None:
    """torch.nn's ``attn_mask`` and ``key_padding_mask`` -> one glassformer mask.

    ``shape`` is (B, H, T, S); ``batched=False`` means torch.nn saw unbatched inputs (B = 1)
    and the masks have no batch dimension. Returns None, a boolean mask (True = may attend) if
    every given mask is boolean, or an additive float mask of ``dtype`` otherwise; broadcastable
    to (B, H, T, S). ``causal=True`` also folds in the (T, S) causal mask (for sub-layers that
    have no causal switch).
    """
    batch, n_head, t, s = shape
    given = (
        _attn_mask(attn_mask, batch, n_head, t, s, batched, names[0]),
        _padding_mask(key_padding_mask, batch, s, batched, names[1]),
    )
    parts = [m for m in given if m is not None]
    if causal:
        parts.append(~causal_mask(t, s, device=parts[0].device if parts else None))
    if not parts:
        return None
    if all(m.dtype == torch.bool for m in parts):
        allowed = ~parts[0]
        for m in parts[1:]:
            allowed = allowed & ~m  # a key is allowed only if no mask forbids it
        return allowed
    total = _additive(parts[0], dtype)
    for m in parts[1:]:
        total = total + _additive(m, dtype)  # b_nm summed, as torch.nn does
    return total


def _additive(m: Tensor, dtype: torch.dtype) -> Tensor:
    """torch.nn mask -> additive float mask: bool True (not allowed) -> -inf, else 0."""
    if m.dtype == torch.bool:
        return torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill(m, float("-inf"))
    return m.to(dtype)


def _check_dtype(m: Tensor, name: str) -> None:
    if m.dtype != torch.bool and not m.dtype.is_floating_point:
        raise ValueError(
            f"{name} has dtype {m.dtype}; torch.nn masks are bool (True = not allowed) or float "
            "(added to the attention scores)"
        )


def _attn_mask(m, batch, n_head, t, s, batched, name) -> Tensor | None:
    """(T, S) or (B·H, T, S) [(H, T, S) unbatched] -> (T, S) or (B, H, T, S)."""
    if m is None:
        return None
    _check_dtype(m, name)
    per_head = (batch * n_head, t, s) if batched else (n_head, t, s)
    if tuple(m.shape) == (t, s):
        return m  # (T, S): broadcasts over B and H
    if tuple(m.shape) == per_head:
        return m.reshape(batch, n_head, t, s)  # (B, H, T, S): torch packs B·H batch-major
    raise ValueError(
        f"{name} must have shape (T, S) = {(t, s)} or "
        f"{'(B·H, T, S)' if batched else '(H, T, S)'} = {per_head}, got {tuple(m.shape)}"
    )


def _padding_mask(m, batch, s, batched, name) -> Tensor | None:
    """(B, S) [(S,) unbatched], True = padding -> (B, 1, 1, S)."""
    if m is None:
        return None
    _check_dtype(m, name)
    want = (batch, s) if batched else (s,)
    if tuple(m.shape) != want:
        raise ValueError(
            f"{name} must have shape {'(B, S)' if batched else '(S,)'} = {want}, "
            f"got {tuple(m.shape)}"
        )
    return m.reshape(batch, 1, 1, s)  # (B, 1, 1, S)
