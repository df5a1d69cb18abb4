"""The keys beyond a query's band, for ``glassformer.graphs.kernels.band.BandAttention``.

Two kinds: keys that every query lists ("shared": Longformer's and BigBird's global columns),
whose scores for all queries and heads are one matrix product, and a few keys of each query's
own (BigBird's random keys), a sparse T×S pattern with e entries per row (``csr.Pattern``):
their scores a_nm = q_n · k_m / √D are one sampled matrix product (SDDMM) per head and their
messages Σ_m A_nm v_m one sparse-dense product, with no (T, e, D) gather of keys or values.

Their part of Eq. (1)-(3) of "What Happens in A Transformer Layer" joins the band's through the
log-sum-exp. With ℓ the band's log-sum-exp and z_band its output, M the row's largest score and
w = e^{ℓ − M},

    z_n = (w z_band + Σ_{m extra} e^{a_nm − M} v_m) / (w + Σ_{m extra} e^{a_nm − M}),

and the row's log-sum-exp becomes M + log(w + Σ e^{a_nm − M}). In backward, each part's
dS = P ⊙ (dP − rowsum(dO ⊙ O)) uses P = e^{a − lse} with the final lse, so the parts' gradients
are computed apart and added.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .band_geometry import NEG_INF
from .csr import Pattern, heads


@dataclass
class Extras:
    """Keys beyond the band: each query's own (T, e) with which count (B, T, e), and keys
    every query may see, ``shared`` (g,), with which count (B, T, g)."""

    own: Tensor | None
    own_ok: Tensor | None
    shared: Tensor | None
    shared_ok: Tensor | None


def _per_head(x: Tensor, h: int) -> Tensor:
    """(B, H_kv, n, F) -> (B, H, n, F): each key/value head for its group of query heads."""
    return x if x.shape[1] == h else x.repeat_interleave(h // x.shape[1], 1)


def _group_sum(x: Tensor, h_kv: int) -> Tensor:
    """(B, H, n, F) -> (B, H_kv, n, F): the sum over each group of query heads."""
    return x.unflatten(1, (h_kv, -1)).sum(2)


def _shared_scores(q, k, ex: Extras, scale) -> Tensor:
    """(B, H, T, g) scores on the shared keys, masked (Eq. 2)."""
    kg = _per_head(k[:, :, ex.shared], q.shape[1]).to(q.dtype)  # (B, H, g, D)
    return (q @ kg.transpose(-1, -2)).mul_(scale).masked_fill_(~ex.shared_ok[:, None], NEG_INF)


def _own_scores(q, k, ex: Extras, keys: Pattern, scale) -> Tensor:
    """(B, H, T, e) scores on each query's own keys, masked (Eq. 2)."""
    s = q.new_empty(*q.shape[:3], ex.own.shape[1])
    for b, h, hk in heads(q, k):
        s[b, h] = keys.sample(q[b, h], k[b, hk].to(q.dtype)).view_as(s[b, h])
    return s.mul_(scale).masked_fill_(~ex.own_ok[:, None], NEG_INF)


def _normalise(lse: Tensor, parts: list[Tensor]):
    """The shared shift M (B, H, T, 1), the band's weight w = e^{ℓ − M}, the parts' weights
    e^{a − M} and the total z = w + Σ e^{a − M}."""
    mx = lse[..., None]
    for s in parts:
        mx = torch.maximum(mx, s.amax(-1, keepdim=True))
    mx = mx.masked_fill(mx == NEG_INF, 0.0)  # a row with nothing to see: keep 0
    w = (lse[..., None] - mx).exp()
    ps = [(s - mx).exp() for s in parts]
    z = w + sum(p.sum(-1, keepdim=True) for p in ps)
    return mx, w, ps, z


def merge(q, k, v, out, lse, ex: Extras, scale):
    """The band's out (B, H, T, D_v) and lse (B, H, T), computing dtype, with the extra keys
    joined: in place, no autograd."""
    ct = out.dtype
    q = q.to(ct)
    keys = None if ex.own is None else Pattern.per_row(ex.own, k.shape[2])
    parts = [] if ex.shared is None else [_shared_scores(q, k, ex, scale)]
    if keys is not None:
        parts.append(_own_scores(q, k, ex, keys, scale))
    mx, w, ps, z = _normalise(lse, parts)
    out.mul_(w)
    if ex.shared is not None:
        vg = _per_head(v[:, :, ex.shared], q.shape[1]).to(ct)  # (B, H, g, D_v)
        out.flatten(0, 1).baddbmm_(ps[0].flatten(0, 1), vg.flatten(0, 1))
    if keys is not None:
        for b, h, hk in heads(q, k):  # Σ_m e^{a_nm − M} v_m over the own keys
            out[b, h].addmm_(keys.rows(ps[-1][b, h]), v[b, hk].to(ct))
    lse.copy_((mx + z.log())[..., 0])
    out.div_(z.masked_fill_(z == 0, 1.0))


def merge_reference(q, k, v, out, lse, ex: Extras, scale, dropout_p: float):
    """``merge`` in plain differentiable torch operations (gathers), with dropout on the
    extra keys' weights: out (B, H, T, D_v)."""
    ct, h = out.dtype, q.shape[1]
    q = q.to(ct)
    parts, vals = [], []
    if ex.shared is not None:
        parts.append(_shared_scores(q, k, ex, scale))
        vals.append(_per_head(v[:, :, ex.shared], h).to(ct))  # (B, H, g, D_v)
    if ex.own is not None:
        kx, vx = (_per_head(x[:, :, ex.own], h).to(ct) for x in (k, v))  # (B, H, T, e, F)
        s = torch.einsum("bhtd,bhted->bhte", q, kx) * scale
        parts.append(s.masked_fill(~ex.own_ok[:, None], NEG_INF))
    _, w, ps, z = _normalise(lse, parts)
    ps = [F.dropout(p, dropout_p) for p in ps]  # on A_nm = p / z: the same as on p, then / z
    o = out * w
    if ex.shared is not None:
        o = o + ps[0] @ vals[0]
    if ex.own is not None:
        o = o + torch.einsum("bhte,bhtev->bhtv", ps[-1], vx)
    return o / z.masked_fill(z == 0, 1.0)


def merge_backward(q, k, v, dout, lse, delta, ex: Extras, scale, rows, dq, dk, dv):
    """Add the extra keys' gradients into dq, dk, dv (computing dtype): dS = P ⊙ (dP − delta)
    · scale with P = e^{a − lse}; the dense ``rows`` get nothing (their output is not this)."""
    ct, h, h_kv = dq.dtype, q.shape[1], k.shape[1]
    q, dout, lse = q.to(ct), dout.to(ct), lse[..., None]
    if ex.shared is not None:
        kg, vg = (_per_head(x[:, :, ex.shared], h).to(ct) for x in (k, v))  # (B, H, g, F)
        p = _shared_scores(q, k, ex, scale).sub_(lse).exp_()  # (B, H, T, g)
        if rows is not None:
            p.index_fill_(2, rows, 0.0)
        ds = (dout @ vg.transpose(-1, -2)).sub_(delta).mul_(p).mul_(scale)
        dq.flatten(0, 1).baddbmm_(ds.flatten(0, 1), kg.flatten(0, 1))
        dk.index_add_(2, ex.shared, _group_sum(ds.transpose(-1, -2) @ q, h_kv))
        dv.index_add_(2, ex.shared, _group_sum(p.transpose(-1, -2) @ dout, h_kv))
    if ex.own is None:
        return
    keys = Pattern.per_row(ex.own, k.shape[2])
    p = _own_scores(q, k, ex, keys, scale).sub_(lse).exp_()  # (B, H, T, e)
    if rows is not None:
        p.index_fill_(2, rows, 0.0)
    for b, hq, hk in heads(q, k):
        kb, vb = k[b, hk].to(ct), v[b, hk].to(ct)
        ds = keys.sample(dout[b, hq], vb).view_as(p[b, hq])
        ds = ds.sub_(delta[b, hq]).mul_(p[b, hq]).mul_(scale)
        dq[b, hq].addmm_(keys.rows(ds), kb)
        dk[b, hk].addmm_(keys.cols(ds), q[b, hq])
        dv[b, hk].addmm_(keys.cols(p[b, hq]), dout[b, hq])
