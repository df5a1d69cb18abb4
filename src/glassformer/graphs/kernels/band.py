"""The banded attention kernel behind ``local_attention``: Eq. (1) block by block.

Queries are cut into blocks of ``bs`` rows; a block sees one window of ``wm`` keys (its band,
rounded up to whole blocks). Inside a window the scores, the masked softmax (Eq. 3) and the
weighted sum are those of Eq. (1)-(3) of the notes restricted to the allowed keys; nothing of
size T×S is formed. Keys beyond the band (global columns, random keys) join through the
log-sum-exp (``glassformer.graphs.kernels.extra_keys``), and the dense rows (global queries)
replace their band rows (``glassformer.graphs.kernels.dense_rows``), inside the same autograd
Function.

A loop step takes n consecutive blocks of one (batch, key/value head, dilation class): it copies
their query rows and the (n + m − 1)·bs key rows their windows reach into small buffers, and the
n windows are overlapping views of the key buffer (``Tensor.unfold``), so that the scores of a
step are one batched matrix product and no key is copied once per block. What a step allocates
is bounded (SCORE_BUDGET); beside q, k, v, the output and the gradients, nothing of size T is
kept.

The forward pass keeps only the output and each row's log-sum-exp; the backward pass recomputes
each block's scores from q, k and the log-sum-exp, as flash attention does, and uses
dS = P ⊙ (dP − rowsum(dO ⊙ O)); the windows' key gradients overlap and are added block by block.
Time and memory are O(T·W), forward and backward.

Rows: with dilation C, relative position x = position − k0 is row x // C of class x % C, so
that a dilated band is a contiguous band of rows within each class. Per step, shapes are

    q blocks  (n, G·bs, D)     G = H / H_kv query heads share a key/value head
    windows   (n, wm, D)       views into the step's key rows
    scores    (n, G, bs, wm)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .band_geometry import NEG_INF, BandGeometry
from .band_geometry import compute_dtype as _dtype
from .dense_rows import rows_backward, rows_forward
from .extra_keys import Extras, merge, merge_backward


def _windows(keys: Tensor, band: BandGeometry) -> Tensor:
    """(L, F) step key rows -> (n, wm, F): block i's window, a view of rows i·bs.."""
    return keys.unfold(0, band.wm, band.bs).transpose(1, 2)


def _blocks(x: Tensor, n: int) -> Tensor:
    """(G, n·bs, F) -> (n, G·bs, F): each block's rows, a group's heads stacked."""
    if x.shape[0] == 1:
        return x.view(n, -1, x.shape[-1])
    return x.unflatten(1, (n, -1)).transpose(0, 1).reshape(n, -1, x.shape[-1])


def _unblocks(x: Tensor, g: int) -> Tensor:
    """(n, G·bs, F) -> (G, n·bs, F)."""
    return x.unflatten(1, (g, -1)).transpose(0, 1).reshape(g, -1, x.shape[-1])


class Step:
    """One loop step for one (batch, key/value head): the query and key rows of n blocks of a
    class, and the masked scores of their windows."""

    def __init__(self, q, k, band: BandGeometry, where, mask, kvalid):
        c, b0, b1, bi, hk = where
        g, n, ct = q.shape[1] // k.shape[1], b1 - b0, _dtype(q)
        self.n, self.g, self.bi, self.hk = n, g, bi, hk
        self.qr, self.kr = band.query_rows(c, b0, b1), band.key_rows(c, b0, b1)
        self.qb = _blocks(self.qr.take(q[bi, hk * g : (hk + 1) * g]).to(ct), n)  # (n, G·bs, D)
        self.kw = _windows(self.kr.take(k[bi, hk]).to(ct), band)  # (n, wm, D)
        s = torch.bmm(self.qb, self.kw.transpose(1, 2)).mul_(band.scale)  # Eq. (2)
        self.s = s.view(n, g, band.bs, -1).masked_fill_(~(mask & kvalid)[:, None], NEG_INF)


def _loop(q, k, key_mask, band: BandGeometry):
    """Every step's (class, blocks, batch, head) with its band mask and its keys' validity."""
    b, h_kv = k.shape[:2]
    g = q.shape[1] // h_kv
    real = None if key_mask is None else key_mask[..., None]  # (B, S, 1)
    for c, b0, b1 in band.steps(g):
        mask = band.mask(c, b0, b1, q.device)  # (n|1, bs, wm)
        kr = band.key_rows(c, b0, b1)
        inside = kr.take(torch.ones(band.s, 1, dtype=torch.bool, device=q.device))
        for bi in range(b):
            ok = inside if real is None else kr.take(real[bi])  # (L, 1)
            kvalid = _windows(ok, band).squeeze(-1)[:, None, :]  # (n, 1, wm)
            for hk in range(h_kv):
                yield (c, b0, b1, bi, hk), mask, kvalid


def forward_blocks(q, k, v, key_mask, band: BandGeometry, dropout_p: float = 0.0):
    """Eq. (1)-(3) over the band, block by block: out (B, H, T, D_v) and lse (B, H, T), in the
    computing dtype; a row with no key gets zeros and lse −inf.

    Plain torch operations: under autograd this is the reference path (it keeps each step's
    weights for backward, O(T·W) memory), used when dropout is on; ``BandAttention`` runs it
    without recording and recomputes in backward."""
    ct = _dtype(q)
    out = q.new_zeros(*q.shape[:3], v.shape[-1], dtype=ct)  # (B, H, T, D_v)
    lse = q.new_zeros(*q.shape[:3], 1, dtype=ct)
    for where, mask, kvalid in _loop(q, k, key_mask, band):
        st = Step(q, k, band, where, mask, kvalid)
        n, g, bi, hk = st.n, st.g, st.bi, st.hk
        mx = st.s.detach().amax(-1, keepdim=True)
        mx = mx.masked_fill(mx == NEG_INF, 0.0)  # a row with nothing to see: keep 0
        p = st.s.sub_(mx).exp_()  # (n, G, bs, wm)
        z = p.sum(-1, keepdim=True)
        ell = mx + z.log()  # −inf for an empty row
        z = z.masked_fill(z == 0, 1.0)  # empty row: weights 0, output 0
        if dropout_p > 0.0:  # on A_nm = p / z (Eq. 3): the same as on p, then / z
            p = F.dropout(p, dropout_p)
        vw = _windows(st.kr.take(v[bi, hk]).to(ct), band)  # (n, wm, D_v)
        o = torch.bmm(p.view(n, -1, band.wm), vw).view(n, g, band.bs, -1) / z  # z_n = Σ A v
        heads = slice(hk * g, (hk + 1) * g)
        st.qr.put(out[bi, heads], _unblocks(o.flatten(1, 2), g))
        st.qr.put(lse[bi, heads], _unblocks(ell.flatten(1, 2), g))
    return out, lse[..., 0]


class BandAttention(torch.autograd.Function):
    """Eq. (1) over a band, the extra keys and the dense rows, saving only q, k, v, the output
    and the row log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, key_mask, ex, ex_ok, shared, shared_ok, rows, rows_ok, band):
        extras = Extras(ex, ex_ok, shared, shared_ok)
        out, lse = forward_blocks(q, k, v, key_mask, band)
        if ex is not None or shared is not None:
            merge(q, k, v, out, lse, extras, band.scale)
        lse.masked_fill_(lse == NEG_INF, 0.0)  # empty rows: backward's P = e^{−inf − 0} = 0
        if rows is not None:  # the dense rows replace what the band gave them
            z, lse_rows = rows_forward(q, k, v, rows, rows_ok, band.scale)
            out.index_copy_(2, rows, z)
            lse.index_copy_(2, rows, lse_rows)
        out = out.to(v.dtype)
        ctx.save_for_backward(q, k, v, out, lse, key_mask, ex, ex_ok, shared, shared_ok, rows,
                              rows_ok)  # fmt: skip
        ctx.band = band
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, key_mask, ex, ex_ok, shared, shared_ok, rows, rows_ok = ctx.saved_tensors
        band = ctx.band
        dq, dk, dv, delta = _backward(q, k, v, out, lse, dout, key_mask, band, rows)
        if ex is not None or shared is not None:
            extras = Extras(ex, ex_ok, shared, shared_ok)
            merge_backward(q, k, v, dout, lse, delta, extras, band.scale, rows, dq, dk, dv)
        if rows is not None:
            rows_backward(q, k, v, out, lse, dout, rows, rows_ok, band.scale, dq, dk, dv)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), *(None,) * 8


def _grad_scores(s, vals, do, lse, delta, scale):
    """P (recomputed, in place of the scores s) and dS = P ⊙ (dP − delta) · scale, where
    dP = dO · valsᵀ."""
    p = s.sub_(lse).exp_()
    dp = (do @ vals.transpose(-1, -2)).view_as(p)
    return p, dp.sub_(delta).mul_(p).mul_(scale)


def _backward(q, k, v, out, lse, dout, key_mask, band: BandGeometry, rows=None):
    """dq, dk, dv of the band by recomputing each step's weights from the log-sum-exp, and
    delta = rowsum(dO ⊙ O) (B, H, T, 1); the dense ``rows`` get nothing (their output is not
    the band's)."""
    ct, bs = _dtype(q), band.bs
    dq = torch.empty(q.shape, dtype=ct, device=q.device)  # every query row is in one step
    dk = torch.zeros(k.shape, dtype=ct, device=k.device)
    dv = torch.zeros(v.shape, dtype=ct, device=v.device)
    delta = (dout.to(ct) * out.to(ct)).sum(-1, keepdim=True)  # (B, H, T, 1): rowsum(dO ⊙ O)
    lse = lse[..., None]
    keep = None
    if rows is not None:  # no gradient into the band from the dense rows: dO and delta 0
        keep = torch.ones(1, q.shape[2], 1, dtype=ct, device=q.device).index_fill_(1, rows, 0)
        delta.index_fill_(2, rows, 0.0)
    for where, mask, kvalid in _loop(q, k, key_mask, band):
        st = Step(q, k, band, where, mask, kvalid)
        n, g, bi, hk = st.n, st.g, st.bi, st.hk
        heads = slice(hk * g, (hk + 1) * g)
        do = _blocks(st.qr.take(dout[bi, heads]).to(ct), n)  # (n, G·bs, D_v)
        if keep is not None:
            do *= _blocks(st.qr.take(keep.expand(g, -1, -1)), n)
        lse_i = _blocks(st.qr.take(lse[bi, heads]), n).view(n, g, bs, 1)
        d_i = _blocks(st.qr.take(delta[bi, heads]), n).view(n, g, bs, 1)
        vw = _windows(st.kr.take(v[bi, hk]).to(ct), band)  # (n, wm, D_v)
        p, ds = _grad_scores(st.s, vw, do, lse_i, d_i, band.scale)  # (n, G, bs, wm)
        dsb, pb = ds.view(n, g * bs, -1), p.view(n, g * bs, -1)
        dqb = torch.bmm(dsb, st.kw)  # (n, G·bs, D)
        dkw = torch.bmm(dsb.transpose(1, 2), st.qb)  # (n, wm, D): every window slot's dk
        dvw = torch.bmm(pb.transpose(1, 2), do)
        dks = dkw.new_zeros(st.kr.length, dkw.shape[-1])
        dvs = dvw.new_zeros(st.kr.length, dvw.shape[-1])
        for c in range(band.m):  # overlapping windows: slot block c of block i is key block i + c
            dks[c * bs : (c + n) * bs].view(n, bs, -1).add_(dkw[:, c * bs : (c + 1) * bs])
            dvs[c * bs : (c + n) * bs].view(n, bs, -1).add_(dvw[:, c * bs : (c + 1) * bs])
        st.kr.put(dk[bi, hk], dks, add=True)
        st.kr.put(dv[bi, hk], dvs, add=True)
        st.qr.put(dq[bi, heads], _unblocks(dqb, g))
    return dq, dk, dv, delta
