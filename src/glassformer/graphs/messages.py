"""Attention as message passing over a graph's edges: O(E·D) time and memory.

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

    A target with no (unmasked) incoming edge gets zeros. Plain autograd: the backward pass
    keeps per-edge tensors, O(E·H·D).
    """
    _check(q, k, v, edge_index, key_mask)
    b, h, t, _ = q.shape
    h_kv = k.shape[1]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    src, dst = edge_index[0], edge_index[1]
    ct = torch.promote_types(q.dtype, torch.float32)
    qe = q[:, :, dst].unflatten(1, (h_kv, h // h_kv)).to(ct)  # (B, H_kv, G, E, D)
    ke = k[:, :, src].unsqueeze(2).to(ct)  # (B, H_kv, 1, E, D)
    a = ((qe * ke).sum(-1) * scale).flatten(1, 2)  # (B, H, E): Eq. (2) per edge
    if key_mask is not None:
        a = a.masked_fill(~key_mask[:, None, src], float("-inf"))
    # Eq. (3): softmax over the edges into each target, shifted by the target's max score.
    m = torch.full((b, h, t), float("-inf"), dtype=ct, device=q.device)
    m = m.scatter_reduce(2, dst.expand(b, h, -1), a.detach(), "amax")  # (B, H, T)
    m = m.masked_fill(m == float("-inf"), 0.0)
    w = (a - m[:, :, dst]).exp()  # (B, H, E), 0 on masked edges
    z = torch.zeros(b, h, t, dtype=ct, device=q.device).index_add(2, dst, w)  # Σ per target
    alpha = w / z.masked_fill(z == 0, 1.0)[:, :, dst]  # α_e
    if dropout_p > 0.0:
        alpha = F.dropout(alpha, dropout_p)
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
