"""The dense rows of a local graph: queries that attend every key (Longformer's and BigBird's
global tokens), Eq. (1)-(3) of "What Happens in A Transformer Layer" over their g×S scores,
forward and backward, for ``glassformer.graphs.kernels.band.BandAttention``."""

from __future__ import annotations

import torch
from torch import Tensor

from .band_geometry import NEG_INF
from .band_geometry import compute_dtype as _dtype


def _grouped(x: Tensor, h_kv: int) -> Tensor:
    """(B, H, g, F) -> (B·H_kv, G·g, F): the rows of each group of query heads together."""
    return x.reshape(x.shape[0] * h_kv, -1, x.shape[-1])


def _scores(q, k, rows, rows_ok, scale):
    """The dense rows' scores (B·H_kv, G·g, S), masked (Eq. 2), and their queries."""
    ct, (b, h_kv, s, _) = _dtype(q), k.shape
    qr = _grouped(q[:, :, rows].to(ct), h_kv)  # (B·H_kv, G·g, D)
    a = torch.bmm(qr, k.to(ct).flatten(0, 1).transpose(1, 2)).mul_(scale)
    ok = rows_ok[:, None, None].expand(b, h_kv, -1, -1, -1)  # (B, H_kv, 1, g, S)
    a.view(b, h_kv, -1, rows.numel(), s).masked_fill_(~ok, NEG_INF)
    return a, qr


def rows_forward(q, k, v, rows, rows_ok, scale):
    """The dense rows (global queries): z (B, H, g, D_v) and lse (B, H, g) over all S keys."""
    a, _ = _scores(q, k, rows, rows_ok, scale)
    mx = a.amax(-1, keepdim=True)
    mx = mx.masked_fill(mx == NEG_INF, 0.0)
    p = a.sub_(mx).exp_()
    z = p.sum(-1, keepdim=True)
    z = z.masked_fill(z == 0, 1.0)  # a row with no key: zeros, not 0/0
    out = torch.bmm(p, v.to(p.dtype).flatten(0, 1)).div_(z)  # (B·H_kv, G·g, D_v)
    shape = (*q.shape[:2], rows.numel())
    return out.view(*shape, -1), (mx + z.log()).view(shape)


def rows_backward(q, k, v, out, lse, dout, rows, rows_ok, scale, dq, dk, dv):
    """Add the dense rows' gradients into dq, dk, dv (the band gave these rows nothing)."""
    h_kv = k.shape[1]
    a, qr = _scores(q, k, rows, rows_ok, scale)  # (B·H_kv, G·g, S)
    do = _grouped(dout[:, :, rows].to(a.dtype), h_kv)  # (B·H_kv, G·g, D_v)
    p = a.sub_(_grouped(lse[:, :, rows, None], h_kv)).exp_()
    delta = (do * _grouped(out[:, :, rows].to(a.dtype), h_kv)).sum(-1, keepdim=True)
    ds = torch.bmm(do, v.to(a.dtype).flatten(0, 1).transpose(1, 2)).sub_(delta).mul_(p)
    ds.mul_(scale)
    dq.index_copy_(2, rows, torch.bmm(ds, k.to(a.dtype).flatten(0, 1)).view_as(dq[:, :, rows]))
    dk.flatten(0, 1).baddbmm_(ds.transpose(1, 2), qr)  # (B·H_kv, S, D)
    dv.flatten(0, 1).baddbmm_(p.transpose(1, 2), do)
