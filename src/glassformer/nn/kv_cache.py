"""Key/value cache for incremental decoding.

When the decoder produces token t+1 it only needs the query of the newest position; the keys
and values of positions 1..t (Eq. 4 applied to earlier tokens) do not change, so they are kept
here instead of being recomputed. For cross-attention the source's keys and values (Eq. 5) are
computed once per source and reused at every step.

A rolling cache (``window``) keeps only the latest ``window`` positions: enough for a layer
whose attention graph never looks further back (a causal sliding window of w keeps w,
Mistral's rolling buffer), so memory stays bounded however long the generation runs.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["KVCache"]


class KVCache:
    """Keys and values of one attention layer, (B, H_kv, S, D) each.

    With ``max_len`` the storage is allocated once and each step writes only its new positions;
    without it the cache grows by concatenation. With ``window`` it keeps the latest ``window``
    positions only: ``start`` is the position of the first one kept, ``length`` how many are
    kept, ``position`` = start + length the position of the next token.
    """

    def __init__(self, max_len: int | None = None, *, window: int | None = None) -> None:
        if max_len is not None and max_len < 1:
            raise ValueError(f"KVCache: max_len must be a positive int or None, got {max_len}")
        if window is not None and window < 1:
            raise ValueError(f"KVCache: window must be a positive int or None, got {window}")
        self.max_len = None if window is not None else max_len
        self.window = window
        self._k: Tensor | None = None
        self._v: Tensor | None = None
        self.length = 0
        self.start = 0

    @property
    def position(self) -> int:
        """The position of the next token: every position seen, kept or not."""
        return self.start + self.length

    @property
    def keys(self) -> Tensor | None:
        return None if self._k is None else self._k[:, :, : self.length]  # (B, H_kv, S, D)

    @property
    def values(self) -> Tensor | None:
        return None if self._v is None else self._v[:, :, : self.length]  # (B, H_kv, S, D_v)

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add the keys/values of T new positions, (B, H_kv, T, D); return all S so far."""
        t = k.shape[2]
        if self.window is not None:
            return self._roll(k, v)
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

    def _roll(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Attend to the kept positions and the new ones; then keep the latest ``window``."""
        k_all = k if self._k is None else torch.cat([self._k, k], dim=2)  # (B, H_kv, S, D)
        v_all = v if self._v is None else torch.cat([self._v, v], dim=2)
        s = k_all.shape[2]
        keep = min(s, self.window)
        self._k, self._v = k_all[:, :, s - keep :], v_all[:, :, s - keep :]
        self.start += self.length + k.shape[2] - keep
        self.length = keep
        return k_all, v_all

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (B',) in that order, e.g. the surviving beams."""
        if self._k is not None:
            self._k = self._k.index_select(0, index)
            self._v = self._v.index_select(0, index)


class DecoderCache:
    """One KVCache per decoder layer for self-attention, and one per layer for cross-attention."""

    def __init__(
        self,
        n_layer: int,
        max_len: int | None = None,
        *,
        cross_attention: bool = False,
        windows: list[int | None] | None = None,
    ):
        windows = [None] * n_layer if windows is None else windows
        self.self_attn = [KVCache(max_len, window=w) for w in windows]
        self.cross_attn = [KVCache() for _ in range(n_layer)] if cross_attention else None

    @property
    def length(self) -> int:
        """Positions already cached: the position of the next token."""
        return self.self_attn[0].position if self.self_attn else 0

    @property
    def start(self) -> int:
        """The first position every layer still keeps (> 0 once a rolling cache has rolled)."""
        return max((c.start for c in self.self_attn), default=0)

    def reorder(self, index: Tensor) -> None:
        for c in self.self_attn + (self.cross_attn or []):
            c.reorder(index)
