"""The banded attention kernel behind ``local_attention``: Eq. (1) block by block.

Queries are cut into blocks of ``bs`` rows; a block sees one window of W = bs + before + after
keys (its band), plus a few extra keys per query (global columns, random keys). Inside a window
the scores, the masked softmax (Eq. 3) and the weighted sum are those of Eq. (1)-(3) of the
notes restricted to the allowed keys; nothing of size T×S is formed.

The forward pass keeps only the output and each row's log-sum-exp; the backward pass recomputes
each block's scores from q, k and the log-sum-exp, as flash attention does, and uses
dS = P ⊙ (dP − rowsum(dO ⊙ O)). Time and memory are O(T·W), forward and backward: the blocks
are gathered from q, k, v by index, a few blocks at a time, and nothing else is copied.

Rows: with dilation d, relative position x = position − k0 is row x // d of class x % d, so
that a dilated band is a contiguous band of rows within each class. Per step, shapes are

    q block   (B, H_kv, C, n, G, bs, D)   C = d classes, n blocks, G = H / H_kv, bs rows
    window    (B, H_kv, C, n, W, D)       the keys the block's band can reach
    scores    (B, H_kv, C, n, G, bs, W) and, with e extra keys per query, (…, bs, e)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

# Scores computed per loop step (elements); bounds the working memory of one step.
SCORE_BUDGET = 1 << 20


@dataclass(frozen=True)
class Band:
    """Which keys each block of queries can see: row coordinates and the edge predicate.

    Block b holds query rows qoff + b·bs + i (i < bs) of each class c, i.e. queries at
    relative position x = row·C + c, query index x − off; its window holds key rows
    qoff − before + b·bs + j (j < W), key index row·C + c. Query n may attend key m of its
    window when their rows differ by −after .. before, both exist, and ``allows`` holds.
    """

    before: int  # rows
    after: int  # rows
    bs: int  # queries per block
    nb: int  # blocks
    classes: int  # C = dilation
    off: int  # q0 - k0: relative position of query 0
    k0: int  # position of key 0
    t: int
    s: int
    allows: Callable[[Tensor, Tensor], Tensor] | None
    scale: float

    @property
    def width(self) -> int:
        return self.bs + max(self.before + self.after, 0)

    def step(self, b: int, h: int, extras: Tensor | None) -> int:
        """Blocks per loop step, so that a step's scores stay within SCORE_BUDGET."""
        e = 0 if extras is None else extras.shape[-1]
        return max(1, SCORE_BUDGET // max(1, b * h * self.classes * self.bs * (self.width + e)))

    def blocks(self, i0: int, i1: int, key_mask: Tensor | None, device):
        """Blocks i0..i1: query indices (C, n, bs) and key indices (C, n, W), clamped into
        range, which queries are real (C, n, bs), and the mask (B|1, C, n, bs, W)."""
        c, bs, w = self.classes, self.bs, self.width
        qoff = self.off // c
        cls = torch.arange(c, device=device)[:, None, None]  # (C, 1, 1)
        rows = torch.arange(i0, i1, device=device)[:, None] * bs  # (n, 1)
        qrow = qoff + rows + torch.arange(bs, device=device)  # (n, bs)
        krow = qoff - self.before + rows + torch.arange(w, device=device)  # (n, W)
        qi = qrow * c + cls - self.off  # (C, n, bs) query index
        ki = krow * c + cls  # (C, n, W) key index
        delta = qrow[:, :, None] - krow[:, None, :]  # (n, bs, W)
        ok = (delta >= -self.after) & (delta <= self.before)
        real = (qi >= 0) & (qi < self.t)  # (C, n, bs): not a padding row of the last block
        ok = ok & real[..., None] & ((ki >= 0) & (ki < self.s))[:, :, None]
        if self.allows is not None:
            ok = ok & self.allows(self.k0 + self.off + qi[..., None], self.k0 + ki[:, :, None])
        qi, ki = qi.clamp(0, self.t - 1), ki.clamp(0, self.s - 1)
        ok = ok[None] if key_mask is None else ok & key_mask[:, ki][:, :, :, None, :]
        return qi, ki, real, ok


def _dtype(x: Tensor) -> torch.dtype:
    return torch.promote_types(x.dtype, torch.float32)


def _rows(x: Tensor, qi: Tensor, g: int) -> Tensor:
    """(B, H, T, ·) -> (B, H_kv, C, n, G, bs, ·): the block rows at query indices qi."""
    x = x.unflatten(1, (-1, g))[:, :, :, qi]  # (B, H_kv, G, C, n, bs, ·)
    return x.permute(0, 1, 3, 4, 2, 5, 6)


def _put_rows(dst: Tensor, qi: Tensor, rows: Tensor) -> None:
    """Add block rows (B, H_kv, C, n, G, bs, ·) into dst (B, H, T, ·) at query indices qi."""
    g = rows.shape[4]
    flat = rows.permute(0, 1, 4, 2, 3, 5, 6).flatten(3, 5)  # (B, H_kv, G, C·n·bs, ·)
    dst.unflatten(1, (-1, g)).index_add_(3, qi.flatten(), flat.to(dst.dtype))


def _scores(qb, k, kidx, ok, ex, ex_ok, scale):
    """Masked scores of a step: the window's (B, H_kv, C, n, G, bs, W) and the extras'
    (B, H_kv, C, n, G, bs, e) or None, with the keys they used (window, extras)."""
    ct, (g, bs) = _dtype(qb), qb.shape[4:6]
    kw = k[:, :, kidx].to(ct)  # (B, H_kv, C, n, W, D)
    s = (qb.flatten(4, 5) @ kw.transpose(-1, -2)).unflatten(4, (g, bs)).mul_(scale)  # Eq. (2)
    s = s.masked_fill_(~ok[:, None, :, :, None], float("-inf"))  # (B, H_kv, C, n, G, bs, W)
    if ex is None:
        return s, None, kw, None
    kx = k[:, :, ex].to(ct)  # (B, H_kv, C, n, bs, e, D)
    sx = torch.einsum("...gtd,...ted->...gte", qb, kx).mul_(scale)  # (B, H_kv, C, n, G, bs, e)
    sx = sx.masked_fill_(~ex_ok[:, None, :, :, None], float("-inf"))
    return s, sx, kw, kx


def _extras(ex, ex_ok, qi, real):
    """A step's extras: (C, n, bs, e) key indices and (B, C, n, bs, e) which count."""
    if ex is None:
        return None, None
    return ex[qi], ex_ok[:, qi] & real[..., None]


def forward_blocks(q, k, v, key_mask, ex, ex_ok, band: Band, dropout_p: float = 0.0):
    """Eq. (1)-(3) block by block: out (B, H, T, D_v) and lse (B, H_kv, C, nb, G, bs).

    Plain torch operations: under autograd this is the reference path (it keeps each step's
    weights for backward, O(T·W) memory), used when dropout is on; ``BandAttention`` runs it
    without recording and recomputes in backward. ``ex`` (T, e) are extra key indices and
    ``ex_ok`` (B, T, e) says which count (padding queries have none).
    """
    g, ct = q.shape[1] // k.shape[1], _dtype(q)
    out = torch.zeros(*q.shape[:3], v.shape[-1], dtype=ct, device=q.device)  # (B, H, T, D_v)
    lses, step = [], band.step(q.shape[0], q.shape[1], ex)
    for i0 in range(0, band.nb, step):
        i1 = min(band.nb, i0 + step)
        qi, ki, real, ok = band.blocks(i0, i1, key_mask, q.device)
        exi, exo = _extras(ex, ex_ok, qi, real)
        qb = _rows(q, qi, g).to(ct)  # (B, H_kv, C, n, G, bs, D)
        s, sx, _, _ = _scores(qb, k, ki, ok, exi, exo, band.scale)
        m = s.detach().amax(dim=-1, keepdim=True)  # shift for stability (no gradient needed)
        if sx is not None:
            m = torch.maximum(m, sx.detach().amax(dim=-1, keepdim=True))
        m = m.masked_fill(m == float("-inf"), 0.0)  # a row with nothing to see: keep 0
        p = (s - m).exp()  # the window's and the extras' weights, normalised together
        px = None if sx is None else (sx - m).exp()
        z = p.sum(dim=-1, keepdim=True) + (0.0 if px is None else px.sum(dim=-1, keepdim=True))
        z = z.masked_fill(z == 0, 1.0)  # empty row: weights 0, output 0
        p = p / z  # A_nm (Eq. 3)
        lses.append((m + z.log()).squeeze(-1))
        if dropout_p > 0.0:
            p = F.dropout(p, dropout_p)
        o = p.flatten(4, 5) @ v[:, :, ki].to(ct)  # (B, H_kv, C, n, G·bs, D_v)
        o = o.unflatten(4, (g, band.bs))  # (B, H_kv, C, n, G, bs, D_v)
        if px is not None:
            px = px / z
            if dropout_p > 0.0:
                px = F.dropout(px, dropout_p)
            o = o + torch.einsum("...gte,...tev->...gtv", px, v[:, :, exi].to(ct))
        _put_rows(out, qi, o)  # z_n = Σ_m A_nm v_m
    return out.to(v.dtype), torch.cat(lses, dim=3)


class BandAttention(torch.autograd.Function):
    """Eq. (1) over a band, saving only q, k, v, the output and the row log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, key_mask, ex, ex_ok, band):
        out, lse = forward_blocks(q, k, v, key_mask, ex, ex_ok, band)
        ctx.save_for_backward(q, k, v, out, lse, key_mask, ex, ex_ok)
        ctx.band = band
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, key_mask, ex, ex_ok = ctx.saved_tensors
        band = ctx.band
        g, ct = q.shape[1] // k.shape[1], _dtype(q)
        dq, dk, dv = (torch.zeros(x.shape, dtype=ct, device=x.device) for x in (q, k, v))
        step = band.step(q.shape[0], q.shape[1], ex)
        for i0 in range(0, band.nb, step):
            i1 = min(band.nb, i0 + step)
            qi, ki, real, ok = band.blocks(i0, i1, key_mask, q.device)
            exi, exo = _extras(ex, ex_ok, qi, real)
            qb = _rows(q, qi, g).to(ct)  # (B, H_kv, C, n, G, bs, D)
            s, sx, kw, kx = _scores(qb, k, ki, ok, exi, exo, band.scale)
            lse_i = lse[:, :, :, i0:i1, ..., None]
            p = s.sub_(lse_i).exp_()  # A, recomputed: (…, G, bs, W)
            do = _rows(dout, qi, g).to(ct)  # (B, H_kv, C, n, G, bs, D_v)
            delta = (do * _rows(out, qi, g).to(ct)).sum(-1, keepdim=True)  # rowsum(dO ⊙ O)
            vw = v[:, :, ki].to(ct)  # (B, H_kv, C, n, W, D_v)
            dp = (do.flatten(4, 5) @ vw.transpose(-1, -2)).unflatten(4, (g, band.bs))
            ds = dp.sub_(delta).mul_(p).mul_(band.scale)  # dL/d(q·k), the scale folded in
            dsb, pb = ds.flatten(4, 5), p.flatten(4, 5)  # (…, G·bs, W)
            dqb = (dsb @ kw).unflatten(4, (g, band.bs))  # (B, H_kv, C, n, G, bs, D)
            flat = ki.flatten()  # (C·n·W,) key index of every window slot
            dk.index_add_(2, flat, (dsb.transpose(-1, -2) @ qb.flatten(4, 5)).flatten(2, 4))
            dv.index_add_(2, flat, (pb.transpose(-1, -2) @ do.flatten(4, 5)).flatten(2, 4))
            if sx is not None:
                px = sx.sub_(lse_i).exp_()  # (…, G, bs, e)
                vx = v[:, :, exi].to(ct)  # (B, H_kv, C, n, bs, e, D_v)
                dsx = torch.einsum("...gtv,...tev->...gte", do, vx)
                dsx = dsx.sub_(delta).mul_(px).mul_(band.scale)
                flat = exi.flatten()
                dqb = dqb + torch.einsum("...gte,...ted->...gtd", dsx, kx)
                dkx = torch.einsum("...gte,...gtd->...ted", dsx, qb)  # (…, bs, e, D)
                dk.index_add_(2, flat, dkx.flatten(2, 5))
                dv.index_add_(2, flat, torch.einsum("...gte,...gtv->...tev", px, do).flatten(2, 5))
            _put_rows(dq, qi, dqb)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None
