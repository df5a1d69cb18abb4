"""Adapters: glassformer modules called with torch.nn's arguments (attention and layers).

Each adapter wraps a native glassformer module (``.module``) and takes exactly the call
arguments of the torch.nn module it stands in for: sequence-first or batch-first tensors (as
``batch_first`` says), unbatched 2-D inputs, torch.nn's masks (bool True = not allowed, or
float additive; ``*_key_padding_mask`` True = padding) and the ``is_causal`` hints. Masks and
layout are converted once, at the boundary (``torch_masks``); the computation is glassformer's.

Differences from torch.nn, by design:
  * a query row with nothing to attend to gives zeros (torch.nn gives NaN);
  * attention weights are returned *before* dropout (torch.nn returns them after dropout);
  * ``is_causal=True`` without a mask applies the causal mask (torch.nn raises);
  * no nested-tensor fast path: outputs at padded positions are computed like any other
    position (torch.nn's ``TransformerEncoder`` fast path writes 0 there).
"""

from __future__ import annotations

from torch import Tensor, nn

from ..nn import attention
from ..nn.blocks import DecoderBlock, EncoderBlock
from ..nn.multihead import MultiHeadAttention
from .torch_masks import from_batch_first, glassformer_mask, resolve_causal, to_batch_first

__all__ = ["TorchStyleDecoderLayer", "TorchStyleEncoderLayer", "TorchStyleMultiheadAttention"]


class TorchStyle(nn.Module):
    """Base of the adapters: the native module and torch.nn's ``batch_first``."""

    def __init__(self, module: nn.Module, batch_first: bool = False) -> None:
        super().__init__()
        self.module = module
        self.batch_first = batch_first

    def extra_repr(self) -> str:
        return f"batch_first={self.batch_first}"


class TorchStyleMultiheadAttention(TorchStyle):
    """``torch.nn.MultiheadAttention``'s call on a glassformer ``MultiHeadAttention``.

    ``query is key is value`` runs self-attention (Eq. 4), ``key is value`` cross-attention
    (Eq. 5); three different tensors are projected by W^Q, W^K, W^V each. Then Eq. (1) per
    head and W^O.
    """

    module: MultiHeadAttention

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Returns (output, weights): weights (B, T, S) averaged over heads, (B, H, T, S)
        per head if ``average_attn_weights=False`` (no B when unbatched), None unless
        ``need_weights``. The weights are taken before attention dropout."""
        m = self.module
        q, batched = to_batch_first(query, self.batch_first, "query")  # (B, T, C)
        k, k_batched = to_batch_first(key, self.batch_first, "key")  # (B, S, C)
        v, v_batched = to_batch_first(value, self.batch_first, "value")  # (B, S, C)
        if not batched == k_batched == v_batched:
            raise ValueError(
                "query, key and value must all be batched (3-D) or all unbatched (2-D), got "
                f"{query.dim()}-D, {key.dim()}-D, {value.dim()}-D"
            )
        b, t, s = q.shape[0], q.shape[1], k.shape[1]
        causal = resolve_causal(is_causal, attn_mask, t, s, "is_causal")
        shape = (b, m.n_head, t, s)
        mask = glassformer_mask(attn_mask, key_padding_mask, shape, batched=batched, dtype=q.dtype)
        if query is key and key is value:  # self-attention
            out = m(q, mask=mask, causal=causal, need_weights=need_weights)
        elif key is value:  # cross-attention
            out = m(q, k, mask, causal=causal, need_weights=need_weights)
        else:
            out = self._separate(q, k, v, mask, causal, need_weights)
        y, w = out if need_weights else (out, None)  # the module returns A only when asked
        y = from_batch_first(y, self.batch_first, batched)
        if w is not None:
            w = w.mean(dim=1) if average_attn_weights else w  # (B, T, S) or (B, H, T, S)
            w = w if batched else w.squeeze(0)
        return y, w

    def _separate(self, q, k, v, mask, causal, need_weights):
        """Q of q, K of k (the module's projections), V = v_proj(v), then Eq. (1) and W^O."""
        m = self.module
        b, t, _ = q.shape
        s, d = k.shape[1], m.head_dim
        qh = m.queries(q).view(b, t, m.n_head, d).transpose(1, 2)  # (B, H, T, D)
        kh = m.keys(k).view(b, s, m.n_kv_head, d).transpose(1, 2)  # (B, H_kv, S, D)
        vh = m.v_proj(v).view(b, s, m.n_kv_head, d).transpose(1, 2)  # (B, H_kv, S, D)
        p = m.dropout if m.training else 0.0
        y, w = attention(qh, kh, vh, mask, p, causal=causal, need_weights=need_weights)
        y = m.out_proj(y.transpose(1, 2).reshape(b, t, m.n_head * d))  # (B, T, C): W^O
        return (y, w) if need_weights else y


def n_head_of(module: nn.Module) -> int:
    """Heads of a block, or of the first block of a stack."""
    layer = module if isinstance(module, EncoderBlock | DecoderBlock) else module.blocks[0]
    return layer.attn.n_head


def encode(
    encoder: nn.Module,
    batch_first: bool,
    src: Tensor,
    mask: Tensor | None,
    padding: Tensor | None,
    is_causal: bool | None,
    names: tuple[str, str, str, str] = ("src", "mask", "src_key_padding_mask", "is_causal"),
) -> Tensor:
    """torch.nn-style call of an EncoderBlock or Encoder; ``names`` are the torch argument
    names of (src, mask, key padding mask, is_causal) for error messages."""
    x, batched = to_batch_first(src, batch_first, names[0])  # (B, T, C)
    b, t = x.shape[:2]
    causal = resolve_causal(is_causal, mask, t, t, names[3])
    shape = (b, n_head_of(encoder), t, t)
    gmask = glassformer_mask(mask, padding, shape, batched=batched, dtype=x.dtype, names=names[1:3])
    return from_batch_first(encoder(x, gmask, causal=causal), batch_first, batched)


def decode(
    decoder: nn.Module,
    batch_first: bool,
    tgt: Tensor,
    memory: Tensor,
    masks: tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None],
    tgt_is_causal: bool | None,
    memory_is_causal: bool,
) -> Tensor:
    """torch.nn-style call of a DecoderBlock or Decoder; ``masks`` = (tgt_mask, memory_mask,
    tgt_key_padding_mask, memory_key_padding_mask)."""
    tgt_mask, memory_mask, tgt_padding, memory_padding = masks
    x, batched = to_batch_first(tgt, batch_first, "tgt")  # (B, T, C)
    z, z_batched = to_batch_first(memory, batch_first, "memory")  # (B, S, C)
    if batched != z_batched or z.shape[0] != x.shape[0]:
        raise ValueError(
            "tgt and memory must both be batched (3-D) with the same batch size, or both "
            f"unbatched (2-D); got shapes {tuple(tgt.shape)} and {tuple(memory.shape)}"
        )
    b, t, s = x.shape[0], x.shape[1], z.shape[1]
    h = n_head_of(decoder)
    causal = resolve_causal(tgt_is_causal, tgt_mask, t, t, "tgt_is_causal")
    memory_causal = resolve_causal(memory_is_causal, memory_mask, t, s, "memory_is_causal")
    self_mask = glassformer_mask(
        tgt_mask,
        tgt_padding,
        (b, h, t, t),
        batched=batched,
        dtype=x.dtype,
        names=("tgt_mask", "tgt_key_padding_mask"),
    )
    cross_mask = glassformer_mask(
        memory_mask,
        memory_padding,
        (b, h, t, s),
        batched=batched,
        dtype=x.dtype,
        causal=memory_causal,  # cross-attention has no causal switch: fold it into the mask
        names=("memory_mask", "memory_key_padding_mask"),
    )
    y = decoder(x, mask=self_mask, memory=z, memory_mask=cross_mask, causal=causal)
    return from_batch_first(y, batch_first, batched)


class TorchStyleEncoderLayer(TorchStyle):
    """``torch.nn.TransformerEncoderLayer``'s call on a glassformer ``EncoderBlock``."""

    module: EncoderBlock

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        names = ("src", "src_mask", "src_key_padding_mask", "is_causal")
        padding = src_key_padding_mask
        return encode(self.module, self.batch_first, src, src_mask, padding, is_causal, names)


class TorchStyleDecoderLayer(TorchStyle):
    """``torch.nn.TransformerDecoderLayer``'s call on a glassformer ``DecoderBlock``."""

    module: DecoderBlock

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        masks = (tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)
        first = self.batch_first
        return decode(self.module, first, tgt, memory, masks, tgt_is_causal, memory_is_causal)
