"""Key/value cache for incremental decoding.

When the decoder produces token t+1 it only needs the query of the newest position; the keys
and values of positions 1..t (Eq. 4 applied to earlier tokens) do not change, so they are kept
here instead of being recomputed. For cross-attention the source's keys and values (Eq. 5) are
computed once per source and reused at every step.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["KVCache"]


class KVCache:
    """Keys and values of one attention layer, (B, H_kv, S, D) each.

    With ``max_len`` the storage is allocated once and each step writes only its new positions;
    without it the cache grows by concatenation.
    """

    def __init__(self, max_len: int | None = None) -> None:
        if max_len is not None and max_len < 1:
            raise ValueError(f"KVCache: max_len must be a positive int or None, got {max_len}")
        self.max_len = max_len
        self._k: Tensor | None = None
        self._v: Tensor | None = None
        self.length = 0

    @property
    def keys(self) -> Tensor | None:
        return None if self._k is None else self._k[:, :, : self.length]  # (B, H_kv, S, D)

    @property
    def values(self) -> Tensor | None:
        return None if self._v is None else self._v[:, :, : self.length]  # (B, H_kv, S, D_v)

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add the keys/values of T new positions, (B, H_kv, T, D); return all S so far."""
        t = k.shape[2]
        if self.max_len is None:
            self._k = k if self._k is None else torch.cat([self._k, k], dim=2)
            self._v = v if self._v is None else torch.cat([self._v, v], dim=2)
        else:
            if self.length + t > self.max_len:
                raise ValueError(
                    f"KVCache: {self.length} cached + {t} new positions exceed "
                    f"max_len={self.max_len}"
                )
            if self._k is None:
                b, h, _, d = k.shape
                self._k = k.new_empty(b, h, self.max_len, d)
                self._v = v.new_empty(b, h, self.max_len, v.shape[-1])
            self._k[:, :, self.length : self.length + t] = k
            self._v[:, :, self.length : self.length + t] = v
        self.length += t
        return self.keys, self.values

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (B',) in that order, e.g. the surviving beams."""
        if self._k is not None:
            self._k = self._k.index_select(0, index)
            self._v = self._v.index_select(0, index)

    def reset(self) -> None:
        self._k = self._v = None
        self.length = 0


class DecoderCache:
    """One KVCache per decoder layer for self-attention, and one per layer for cross-attention."""

    def __init__(self, n_layer: int, max_len: int | None = None, *, cross_attention: bool = False):
        self.self_attn = [KVCache(max_len) for _ in range(n_layer)]
        self.cross_attn = [KVCache() for _ in range(n_layer)] if cross_attention else None

    @property
    def length(self) -> int:
        """Positions already cached: the position of the next token."""
        return self.self_attn[0].length if self.self_attn else 0

    def reorder(self, index: Tensor) -> None:
        for c in self.self_attn + (self.cross_attn or []):
            c.reorder(index)
