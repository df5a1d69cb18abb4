"""The dense rows of a local graph: queries that attend every key (Longformer's and BigBird's
global tokens), Eq. (1)-(3) of "Formal Algorithms for Transformers" over their g×S scores,
forward and backward, for ``glassformer.graphs.band.BandAttention``."""

from __future__ import annotations

from torch import Tensor

from .band_geometry import NEG_INF
from .band_geometry import compute_dtype as _dtype


def _expand_kv(x: Tensor, h: int) -> Tensor:
    """(B, H_kv, S, F) -> (B, H, S, F): each key/value head for its group of query heads."""
    return x if x.shape[1] == h else x.repeat_interleave(h // x.shape[1], 1)


def rows_forward(q, k, v, rows, rows_ok, scale):
    """The dense rows (global queries): z (B, H, g, D_v) and lse (B, H, g) over all S keys."""
    ct = _dtype(q)
    kk, vv = (_expand_kv(x, q.shape[1]).to(ct) for x in (k, v))
    a = (q[:, :, rows].to(ct) @ kk.transpose(-1, -2)) * scale  # (B, H, g, S): Eq. (2)
    a = a.masked_fill_(~rows_ok[:, None], NEG_INF)
    mx = a.amax(-1, keepdim=True)
    mx = mx.masked_fill(mx == NEG_INF, 0.0)
    p = a.sub_(mx).exp_()
    z = p.sum(-1, keepdim=True)
    z = z.masked_fill(z == 0, 1.0)  # a row with no key: zeros, not 0/0
    return (p @ vv) / z, mx + z.log()


def rows_backward(q, k, v, out, lse, dout, rows, rows_ok, scale, dq, dk, dv):
    """Add the dense rows' gradients into dq, dk, dv (the band gave these rows nothing)."""
    ct, h, h_kv = _dtype(q), q.shape[1], k.shape[1]
    kk, vv = (_expand_kv(x, h).to(ct) for x in (k, v))
    qr, do = q[:, :, rows].to(ct), dout[:, :, rows].to(ct)  # (B, H, g, ·)
    a = (qr @ kk.transpose(-1, -2)) * scale
    p = a.masked_fill_(~rows_ok[:, None], NEG_INF).sub_(lse[:, :, rows, None]).exp_()
    delta = (do * out[:, :, rows].to(ct)).sum(-1, keepdim=True)
    ds = (do @ vv.transpose(-1, -2)).sub_(delta).mul_(p).mul_(scale)
    dq.index_copy_(2, rows, ds @ kk)
    dk += (ds.transpose(-1, -2) @ qr).unflatten(1, (h_kv, -1)).sum(2)
    dv += (p.transpose(-1, -2) @ do).unflatten(1, (h_kv, -1)).sum(2)
