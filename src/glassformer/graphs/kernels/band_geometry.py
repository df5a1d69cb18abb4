"""Where each block of queries of the local-attention kernel looks (``BandGeometry``), which
rows of q, k, v a loop step takes (``Rows``).

Rows: with dilation C, relative position x = position − k0 is row x // C of class x % C, so
that a dilated band is a contiguous band of rows within each class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

# Scores computed per loop step (elements); bounds the working memory of one step.
SCORE_BUDGET = 1 << 20
NEG_INF = float("-inf")


@dataclass(frozen=True)
class BandGeometry:
    """Which keys each block of queries can see: row coordinates and the edge predicate.

    Query block b of class c holds rows qoff + b·bs + i (i < bs), queries at relative position
    x = row·C + c; its window holds key rows qoff − before + b·bs + j (j < wm). Query row r may
    attend key row r' when r − r' is in −after .. before (that is 0 <= j − i <= before + after),
    the key exists, and ``allows`` holds.
    """

    before: int  # rows
    after: int  # rows
    bs: int  # queries per block
    classes: int  # C = dilation
    off: int  # q0 - k0: relative position of query 0
    k0: int  # position of key 0
    t: int
    s: int
    allows: Callable[[Tensor, Tensor], Tensor] | None
    scale: float

    @property
    def span(self) -> int:
        return max(self.before + self.after, 0)

    @property
    def m(self) -> int:
        """The window in blocks."""
        return -(-(self.bs + self.span) // self.bs)

    @property
    def wm(self) -> int:
        return self.m * self.bs

    @property
    def qoff(self) -> int:
        return self.off // self.classes

    @property
    def nb(self) -> int:
        """Query blocks per class."""
        rows = -(-(self.t + self.off % self.classes) // self.classes)
        return -(-rows // self.bs)

    def step(self, g: int) -> int:
        """Blocks per loop step, so that a step's scores stay within SCORE_BUDGET."""
        return max(1, SCORE_BUDGET // (g * self.bs * self.wm))

    def steps(self, g: int):
        """(class, first block, end block) of every loop step."""
        n = self.step(g)
        for c in range(self.classes):
            for b0 in range(0, self.nb, n):
                yield c, b0, min(self.nb, b0 + n)

    def query_rows(self, c: int, b0: int, b1: int) -> Rows:
        """The queries of blocks b0..b1 of class c."""
        return Rows.of(self.qoff + b0 * self.bs, (b1 - b0) * self.bs, c, self, self.off, self.t)

    def key_rows(self, c: int, b0: int, b1: int) -> Rows:
        """The keys the windows of blocks b0..b1 of class c reach."""
        lo = self.qoff - self.before + b0 * self.bs
        return Rows.of(lo, (b1 - b0 + self.m - 1) * self.bs, c, self, 0, self.s)

    def mask(self, c: int, b0: int, b1: int, device) -> Tensor:
        """(n|1, bs, wm) bool: window slot j is in query i's band (0 <= j - i <= before +
        after) and, when given, ``allows`` holds."""
        bs, wm = self.bs, self.wm
        gap = torch.arange(wm, device=device) - torch.arange(bs, device=device)[:, None]
        ok = ((gap >= 0) & (gap <= self.span))[None]  # (1, bs, wm)
        if self.allows is None:
            return ok
        blocks = torch.arange(b0, b1, device=device)[:, None] * bs  # (n, 1)
        qrow = self.qoff + blocks + torch.arange(bs, device=device)  # (n, bs)
        krow = self.qoff - self.before + blocks + torch.arange(wm, device=device)  # (n, wm)
        qpos, kpos = self.k0 + qrow * self.classes + c, self.k0 + krow * self.classes + c
        return ok & self.allows(qpos[:, :, None], kpos[:, None, :])


@dataclass(frozen=True)
class Rows:
    """``length`` rows lo.. of class c, of which rows ``at``..``at + count`` exist: they are the
    entries first, first + C, ... of the (…, N, ·) tensor they come from."""

    length: int
    at: int
    count: int
    first: int
    classes: int

    @classmethod
    def of(cls, lo: int, length: int, c: int, band: BandGeometry, shift: int, limit: int) -> Rows:
        """Rows lo..lo+length of class c; row r is entry r·C + c − shift, kept in 0..limit."""
        C = band.classes
        r0 = max(lo, -((shift - c) // -C))  # ceil((shift - c) / C)
        r1 = min(lo + length, (limit - 1 + shift - c) // C + 1)
        return cls(length, r0 - lo, max(0, r1 - r0), r0 * C + c - shift, C)

    def take(self, x: Tensor) -> Tensor:
        """(…, N, F) -> (…, length, F): the rows, zeros where there is none."""
        buf = x.new_zeros(*x.shape[:-2], self.length, x.shape[-1])
        if self.count:
            buf[..., self.at : self.at + self.count, :] = self._of(x)
        return buf

    def put(self, dst: Tensor, rows: Tensor, add: bool = False) -> None:
        """Write (or add) rows (…, length, F) into dst (…, N, F) where they exist."""
        if not self.count:
            return
        src = rows[..., self.at : self.at + self.count, :]
        if add:
            self._of(dst).add_(src)
        else:
            self._of(dst).copy_(src)

    def _of(self, x: Tensor) -> Tensor:
        end = self.first + (self.count - 1) * self.classes + 1
        return x[..., self.first : end : self.classes, :]


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype the kernels compute in: at least float32."""
    return torch.promote_types(x.dtype, torch.float32)
