"""Attention as message passing over a graph's edges: O(E·D) time, O(T·D + E) memory.

"Formal Algorithms for Transformers", Transformers as GNNs: each edge j -> i carries a message
v_j weighted by the attention of query i on key j, so Eq. (1)-(3) of the notes become

    a_e = q_i · k_j / √D  for every edge e = (j -> i)                               (2)
    α_e = e^{a_e} / Σ_{e' into i} e^{a_e'}                                           (3)
    z_i = Σ_{e into i} α_e v_j                                                       (1)

a softmax grouped by target node, as in PyTorch Geometric's ``TransformerConv``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .band_geometry import NEG_INF
from .band_geometry import compute_dtype as _dtype
from .csr import Pattern, heads

__all__ = ["edge_attention"]


def edge_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    edge_index: Tensor,
    *,
    key_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> Tensor:
    """Eq. (1) over the edges of a graph: z (B, H, T, D_v).

    Args:
        q: (B, H, T, D) queries (target nodes); k: (B, H_kv, S, D) keys; v: (B, H_kv, S, D_v)
            values (source nodes), H_kv dividing H.
        edge_index: (2, E) long, PyTorch Geometric's convention: row 0 = source j (a key
            index), row 1 = target i (a query index); messages flow j -> i. An edge listed
            twice counts twice, as in PyTorch Geometric.
        key_mask: (B, S) bool, True = a real key; edges from padding keys carry no message.
        dropout_p: dropout on the weights α (pass 0 in eval mode).
        scale: score scale, default 1/√D.

    A target with no (unmasked) incoming edge gets zeros. The scores and messages are
    sparse products on the edges (``glassformer.graphs.kernels.csr``): time O(E·D), and the
    backward pass keeps q, k, v, the output and a log-sum-exp per target, recomputing the (B, H, E)
    scores. With dropout the edges run in plain autograd, which keeps O(E·H·D).
    """
    _check(q, k, v, edge_index, key_mask)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    if dropout_p > 0.0:
        return _reference(q, k, v, edge_index, key_mask, dropout_p, scale)
    return EdgeAttention.apply(q, k, v, edge_index, key_mask, scale)


def _scores(q, k, pat: Pattern, key_mask, scale) -> Tensor:
    """(B, H, E) scores a_e = q_i · k_j / √D on the pattern's edges, masked (Eq. 2)."""
    a = q.new_empty(*q.shape[:2], pat.col.numel())
    for b, h, hk in heads(q, k):
        a[b, h] = pat.sample(q[b, h], k[b, hk].to(q.dtype))
    a.mul_(scale)
    return a if key_mask is None else a.masked_fill_(~key_mask[:, None, pat.col], NEG_INF)


class EdgeAttention(torch.autograd.Function):
    """Eq. (1)-(3) over the edges with CSR products, saving q, k, v, the output and each
    target's log-sum-exp; backward recomputes the scores (dS = P ⊙ (dP − rowsum(dO ⊙ O)))."""

    @staticmethod
    def forward(ctx, q, k, v, edge_index, key_mask, scale):
        b, h, t, _ = q.shape
        ct = _dtype(q)
        pat = Pattern.of_edges(edge_index, t, k.shape[2])
        a = _scores(q.to(ct), k, pat, key_mask, scale)  # (B, H, E)
        row = pat.row.expand(b, h, -1)
        m = a.new_full((b, h, t), NEG_INF).scatter_reduce_(2, row, a, "amax")  # (B, H, T)
        m = m.masked_fill_(m == NEG_INF, 0.0)
        w = a.sub_(m.gather(2, row)).exp_()  # (B, H, E): e^{a_e − max}, 0 on masked edges
        z = torch.zeros_like(m).scatter_add_(2, row, w)  # Σ per target
        out = q.new_zeros(b, h, t, v.shape[-1], dtype=ct)
        for bi, hq, hk in heads(q, k):
            out[bi, hq].addmm_(pat.rows(w[bi, hq]), v[bi, hk].to(ct))  # Σ_e e^{a_e} v_j
        lse = (m + z.log()).masked_fill_(z == 0, 0.0)  # no edge in: lse 0, P = e^{−inf} = 0
        out = out.div_(z.masked_fill_(z == 0, 1.0)[..., None]).to(v.dtype)  # z_i (Eq. 1)
        ctx.save_for_backward(q, k, v, out, lse, key_mask)
        ctx.scale, ctx.pat = scale, pat
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, key_mask = ctx.saved_tensors
        ct, scale, pat = _dtype(q), ctx.scale, ctx.pat
        qc, do = q.to(ct), dout.to(ct)
        row = pat.row.expand(*q.shape[:2], -1)
        delta = (do * out.to(ct)).sum(-1)  # (B, H, T): rowsum(dO ⊙ O)
        p = _scores(qc, k, pat, key_mask, scale).sub_(lse.gather(2, row)).exp_()  # α_e
        d_e = delta.gather(2, row)
        dq = torch.zeros(q.shape, dtype=ct, device=q.device)
        dk = torch.zeros(k.shape, dtype=ct, device=k.device)
        dv = torch.zeros(v.shape, dtype=ct, device=v.device)
        for b, h, hk in heads(q, k):
            kb, vb = k[b, hk].to(ct), v[b, hk].to(ct)
            ds = pat.sample(do[b, h], vb).sub_(d_e[b, h]).mul_(p[b, h]).mul_(scale)
            dq[b, h].addmm_(pat.rows(ds), kb)
            dk[b, hk].addmm_(pat.cols(ds), qc[b, h])
            dv[b, hk].addmm_(pat.cols(p[b, h]), do[b, h])
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None


def _reference(q, k, v, edge_index, key_mask, dropout_p, scale):
    """Eq. (1)-(3) per edge in plain torch operations (gathers), with dropout on α: the
    backward pass keeps per-edge tensors, O(E·H·D)."""
    b, h, t, _ = q.shape
    h_kv = k.shape[1]
    src, dst = edge_index[0], edge_index[1]
    ct = _dtype(q)
    qe = q[:, :, dst].unflatten(1, (h_kv, h // h_kv)).to(ct)  # (B, H_kv, G, E, D)
    ke = k[:, :, src].unsqueeze(2).to(ct)  # (B, H_kv, 1, E, D)
    a = ((qe * ke).sum(-1) * scale).flatten(1, 2)  # (B, H, E): Eq. (2) per edge
    if key_mask is not None:
        a = a.masked_fill(~key_mask[:, None, src], NEG_INF)
    # Eq. (3): softmax over the edges into each target, shifted by the target's max score.
    m = torch.full((b, h, t), NEG_INF, dtype=ct, device=q.device)
    m = m.scatter_reduce(2, dst.expand(b, h, -1), a.detach(), "amax")  # (B, H, T)
    m = m.masked_fill(m == NEG_INF, 0.0)
    w = (a - m[:, :, dst]).exp()  # (B, H, E), 0 on masked edges
    z = torch.zeros(b, h, t, dtype=ct, device=q.device).index_add(2, dst, w)  # Σ per target
    alpha = F.dropout(w / z.masked_fill(z == 0, 1.0)[:, :, dst], dropout_p)  # α_e
    ve = v[:, :, src].unsqueeze(2).to(ct)  # (B, H_kv, 1, E, D_v)
    msg = (alpha.unflatten(1, (h_kv, h // h_kv))[..., None] * ve).flatten(1, 2)  # (B, H, E, D_v)
    out = torch.zeros(b, h, t, v.shape[-1], dtype=ct, device=q.device).index_add(2, dst, msg)
    return out.to(v.dtype)  # z_i = Σ_e α_e v_j (Eq. 1)


def _check(q, k, v, edge_index, key_mask):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            "edge_attention: q, k, v must be 4-D (B, H, T, D), got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    b, h, t, d = q.shape
    s = k.shape[2]
    if k.shape[0] != b or k.shape[-1] != d or k.shape[:3] != v.shape[:3] or h % k.shape[1]:
        raise ValueError(
            f"edge_attention: k must be (B={b}, H_kv, S, D={d}) and v (B, H_kv, S, D_v), "
            f"H_kv dividing H={h}; got k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    ok = edge_index.dim() == 2 and edge_index.shape[0] == 2 and edge_index.dtype == torch.long
    if ok and edge_index.numel():
        src, dst = edge_index
        ok = bool(src.min() >= 0 and src.max() < s and dst.min() >= 0 and dst.max() < t)
    if not ok:
        raise ValueError(
            f"edge_attention: edge_index must be (2, E) long with sources in 0..{s - 1} and "
            f"targets in 0..{t - 1}, got {edge_index.dtype} of shape {tuple(edge_index.shape)}"
        )
    if key_mask is not None and (key_mask.shape != (b, s) or key_mask.dtype != torch.bool):
        raise ValueError(f"edge_attention: key_mask must be ({b}, {s}) bool (True = real key)")
