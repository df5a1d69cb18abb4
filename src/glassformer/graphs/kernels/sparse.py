"""Local (banded) attention whose cost follows the graph: O(T·w) time and memory.

"Formal Algorithms for Transformers", Transformers as GNNs: attention is message passing on a
graph, and sparse attention is a GNN on a sparse graph. A local graph (sliding window, dilated
window, global + local as in Longformer, BigBird's window + global + random keys) gives each
query a band of nearby keys plus a few others; ``local_attention`` computes Eq. (1)-(3) of the
notes,

    z_n = Σ_m A_nm v_m,   A_nm = e^{a_nm} / Σ_m' e^{a_nm'},   a_nm = q_n · k_m / √D,

with the sums over the allowed keys m of query n only, without forming a T×S matrix: the band
runs block by block (``glassformer.graphs.kernels.band``), the few dense rows (global tokens'
queries) by dense attention over their g×S scores. Arbitrary edge lists run as message passing
instead: ``edge_attention`` (``glassformer.graphs.kernels.messages``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .band import BandAttention, forward_blocks
from .band_geometry import BandGeometry
from .extra_keys import Extras, merge_reference
from .messages import edge_attention

__all__ = ["edge_attention", "local_attention"]


def local_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    before: int,
    after: int,
    dilation: int = 1,
    allows: Callable[[Tensor, Tensor], Tensor] | None = None,
    band_full: bool = False,
    q_pos: Tensor | None = None,
    k_pos: Tensor | None = None,
    key_mask: Tensor | None = None,
    extras: Tensor | None = None,
    rows: Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    block: int | None = None,
) -> Tensor:
    """Eq. (1) over a local graph: z (B, H, T, D_v).

    Query n (at position i = q_pos[n]) may attend key m (at position j = k_pos[m]) when
    ``allows(i, j)`` and ``key_mask[b, m]`` hold and m is a candidate: i - before <= j <=
    i + after with i - j a multiple of ``dilation`` (the band), or m is one of the query's
    ``extras``, or n is one of the dense ``rows`` (any key is then a candidate). A query with no
    allowed key gets zeros. Equal to ``glassformer.nn.attention`` with that T×S mask, values and
    gradients; time and memory O(T·(before + after + e) + g·S).

    Args:
        q: (B, H, T, D) queries; k: (B, H_kv, S, D) keys; v: (B, H_kv, S, D_v) values, H_kv
            dividing H (query head h uses key/value head h // (H / H_kv)).
        before, after: the band's reach behind and ahead of each query (ints, sum >= 0).
        dilation: only offsets i - j that are multiples of it are in the band (>= 1).
        band_full: every candidate in the band is an edge (the graph contains the band), so
            ``allows`` is evaluated on the extras and dense rows only.
        allows: the exact edge predicate on positions, ``allows(i, j) -> bool tensor``
            (broadcasting long tensors); None = every candidate.
        q_pos, k_pos: (T,), (S,) contiguous increasing positions; default the last T of
            ``arange(S)`` for the queries (a KV cache) and ``arange(S)`` for the keys.
        key_mask: (B, S) bool, True = a real key (False = padding).
        extras: (T, e) long key indices each query may also attend (global columns, random
            keys); -1 = none. A key listed twice, or also in the band, counts once.
        rows: (g,) long query indices whose row is dense (global tokens' queries).
        dropout_p: dropout on the weights A (pass 0 in eval mode). With dropout the blocks run
            under plain autograd, which keeps each block's weights (memory O(T·w), not O(T)).
        scale: score scale, default 1/√D.
        block: queries per block (default from the band's width).
    """
    b, h, t, _ = q.shape
    s = k.shape[2]
    _check(q, k, v, before, after, dilation, key_mask, extras, rows, block)
    q0 = _start(q_pos, t, s - t, "q_pos")
    k0 = _start(k_pos, s, 0, "k_pos")
    if t == 0:
        return q.new_zeros(b, h, 0, v.shape[-1])
    d = dilation
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    bf, af = before // d, after // d  # the band in rows of each dilation class
    bs = block if block is not None else _default_block(bf + af)
    in_band = None if band_full else allows  # the predicate tested on each band candidate
    band = BandGeometry(bf, af, bs, d, q0 - k0, k0, t, s, in_band, scale)
    ex = ex_ok = shared = shared_ok = None
    if extras is not None:
        real = torch.ones(b, s, dtype=torch.bool, device=q.device) if key_mask is None else key_mask
        ex, ex_ok = _extras(extras, q0, k0, before, after, d, allows, real)  # (T, e), (B, T, e)
        ex, ex_ok, shared, shared_ok = _split_shared(ex, ex_ok)
    rows = None if rows is None or rows.numel() == 0 else rows
    rows_ok = None if rows is None else _rows_mask(rows, q0, k0, s, allows, key_mask)  # (B|1, g, S)
    if dropout_p == 0.0:
        return BandAttention.apply(
            q, k, v, key_mask, ex, ex_ok, shared, shared_ok, rows, rows_ok, band
        )  # (B, H, T, D_v)
    out, lse = forward_blocks(q, k, v, key_mask, band, dropout_p)
    if ex is not None or shared is not None:
        extra = Extras(ex, ex_ok, shared, shared_ok)
        out = merge_reference(q, k, v, out, lse, extra, scale, dropout_p)
    if rows is not None:
        z = _dense_rows(q, k, v, rows, rows_ok, dropout_p, scale)
        out = out.index_copy(2, rows, z.to(out.dtype))
    return out.to(v.dtype)


def _extras(extras, q0, k0, before, after, d, allows, real):
    """Extra keys of each query, (T, e), and which count, (B, T, e): not -1, not repeated, not
    already in the band, allowed, and real keys."""
    ex = extras.sort(dim=-1).values
    ok = ex >= 0
    ok[:, 1:] &= ex[:, 1:] != ex[:, :-1]  # a key listed twice counts once
    ex = ex.clamp(min=0)
    i = q0 + torch.arange(ex.shape[0], device=ex.device)[:, None]  # (T, 1) query positions
    j = k0 + ex  # (T, e) key positions
    gap = i - j
    ok &= ~((gap >= -after) & (gap <= before) & (gap % d == 0))  # the band has it already
    if allows is not None:
        ok &= allows(i, j)
    return ex, ok[None] & real[:, ex]


def _split_shared(ex, ok):
    """Split the extra keys into those every query lists (global columns: (g,) and
    (B, T, g), one matrix product for all queries) and each query's own (T, e') and (B, T, e'), the
    columns that count first and the empty ones dropped."""
    first = ex[0].unique()  # a key every query lists is in the first query's list
    hit = ex[:, :, None] == first  # (T, e, g)
    everywhere = hit.any(1).all(0)  # (g,): listed by every query
    shared = first[everywhere]
    hit = hit[:, :, everywhere]
    shared_ok = (ok[..., None] & hit).any(2)  # (B, T, g)
    ok = ok & ~hit.any(2)
    order = (~ok.any(0)).to(torch.uint8).argsort(dim=1, stable=True)  # counting columns first
    keep = int(ok.any(0).sum(1).max())
    ex, ok = ex.gather(1, order)[:, :keep], ok.gather(2, order.expand_as(ok))[:, :, :keep]
    if not keep:
        ex = ok = None
    if not shared.numel():
        shared = shared_ok = None
    return ex, ok, shared, shared_ok


def _rows_mask(rows, q0, k0, s, allows, key_mask):
    """(B|1, g, S) bool: the keys each dense row (a global token's query) may attend."""
    i = q0 + rows[:, None]  # (g, 1)
    j = k0 + torch.arange(s, device=rows.device)  # (S,)
    ok = torch.ones(1, rows.numel(), s, dtype=torch.bool, device=rows.device)
    if allows is not None:
        ok = ok & allows(i, j)
    return ok if key_mask is None else ok & key_mask[:, None, :]


def _dense_rows(q, k, v, rows, rows_ok, dropout_p, scale):
    """z (B, H, g, D_v) of the dense rows with dropout: masked attention over all S keys."""
    g = q.shape[1] // k.shape[1]  # query heads per key/value head
    k, v = (k, v) if g == 1 else (k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))
    a = (q[:, :, rows] @ k.transpose(-2, -1)) * scale  # (B, H, g, S): Eq. (2)
    a = a.masked_fill(~rows_ok[:, None], float("-inf"))
    dead = a.isneginf().all(-1, keepdim=True)  # a row with no key: zeros, not 0/0
    w = a.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)  # (B, H, g, S): Eq. (3)
    return F.dropout(w, dropout_p) @ v  # (B, H, g, D_v)


def _default_block(width: int) -> int:
    """Queries per block: about a quarter of the band, a multiple of 32 in 32 .. 256 (a
    window of W = block + width keys; smaller blocks waste less of it on masked keys, larger
    ones make fewer, bigger matrix products)."""
    return min(256, max(32, -(-width // 128) * 32))


def _start(pos: Tensor | None, n: int, default: int, name: str) -> int:
    if pos is None:
        return default
    if pos.shape != (n,) or pos.dtype != torch.long:
        raise ValueError(f"local_attention: {name} must be a ({n},) long tensor, got {pos.dtype}")
    start = int(pos[0]) if n else default
    if n and not torch.equal(pos, start + torch.arange(n, device=pos.device)):
        raise ValueError(f"local_attention: {name} must be contiguous increasing positions")
    return start


def _check(q, k, v, before, after, dilation, key_mask, extras, rows, block):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            "local_attention: q, k, v must be 4-D (B, H, T, D), got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    b, h, t, d = q.shape
    if k.shape[0] != b or k.shape[-1] != d or k.shape[:3] != v.shape[:3] or h % k.shape[1]:
        raise ValueError(
            f"local_attention: k must be (B={b}, H_kv, S, D={d}) and v (B, H_kv, S, D_v), "
            f"H_kv dividing H={h}; got k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if before + after < 0:
        raise ValueError(f"local_attention: before + after must be >= 0, got {before}, {after}")
    if dilation < 1 or (block is not None and block < 1):
        raise ValueError(
            f"local_attention: dilation and block must be >= 1, got {dilation}, {block}"
        )
    s = k.shape[2]
    if key_mask is not None and (key_mask.shape != (b, s) or key_mask.dtype != torch.bool):
        raise ValueError(f"local_attention: key_mask must be ({b}, {s}) bool (True = real key)")
    if extras is not None and (extras.dim() != 2 or extras.shape[0] != t or not _in(extras, -1, s)):
        raise ValueError(
            f"local_attention: extras must be ({t}, e) long key indices in -1..{s - 1}"
        )
    if rows is not None and (rows.dim() != 1 or not _in(rows, 0, t)):
        raise ValueError(f"local_attention: rows must be (g,) long query indices in 0..{t - 1}")


def _in(x: Tensor, lo: int, hi: int) -> bool:
    return x.dtype == torch.long and (x.numel() == 0 or (x.min() >= lo and x.max() < hi))
