"""Packing the real tokens of a padded batch, so that position-wise work skips the padding.

Everything in an encoder block but attention itself acts on each position alone: the Q/K/V
and output projections, the feed-forward MLP, the residual additions and the norms. On a
padded batch those can run on the N real tokens only, (B, T, C) -> (N, C), and only
attention needs the (B, T) layout back, with zeros at the padding, which its padding mask
hides anyway. The result at every real token is unchanged; the work shrinks to N / (B T).

``PackedEncoderBlock`` is EncoderBlock with that change, which ``glassformer.fast`` gives to
the models: it packs the real tokens of its input, runs the block's formula on them and puts
them back in their places, in inference (no gradients, eval mode) on CPU with no hook
attached to the block and a padding mask that hides every padded key from every real query.
The padded positions of its output are then zero instead of values nothing should read.
Anything else (a full mask, a graph's mask that shows padded keys, training, a hook) runs
EncoderBlock's own forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..nn import EncoderBlock, MultiHeadAttention, apply_rotary
from ..nn.hooks import HookPoint
from ..nn.multihead import attend
from ..nn.qk_projections import self_projections

__all__ = ["PackedEncoderBlock", "Packing"]


@dataclass(frozen=True)
class Packing:
    """Where the N real tokens of a (B, T) batch are: ``index`` (N,) into the B·T positions."""

    index: Tensor
    batch: int
    length: int

    @classmethod
    def from_mask(cls, token_mask: Tensor) -> Packing:
        """token_mask (B, T), True at real tokens."""
        b, t = token_mask.shape
        return cls(token_mask.reshape(-1).nonzero().squeeze(1), b, t)

    def pack(self, x: Tensor) -> Tensor:
        """(B, T, ...) -> (N, ...): the real tokens, in order."""
        return x.reshape(self.batch * self.length, *x.shape[2:]).index_select(0, self.index)

    def unpack(self, u: Tensor) -> Tensor:
        """(N, ...) -> (B, T, ...), zeros at the padding."""
        out = u.new_zeros(self.batch * self.length, *u.shape[1:])
        out.index_copy_(0, self.index, u)
        return out.view(self.batch, self.length, *u.shape[1:])


class PackedEncoderBlock(EncoderBlock):
    """EncoderBlock whose inference on a padded CPU batch runs on the real tokens only."""

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        packing = None
        if self._may_pack(x, mask, token_mask):
            packing = packing_of(mask, token_mask, causal)
        if packing is None:
            return super().forward(x, mask, causal=causal, token_mask=token_mask, rope=rope)
        y = packed_block(self, packing.pack(x), mask, causal, rope, packing)  # (N, C)
        return packing.unpack(y)

    def _may_pack(self, x: Tensor, mask, token_mask) -> bool:
        return (
            token_mask is not None
            and mask is not None
            and x.device.type == "cpu"
            and not self.training
            and not torch.is_grad_enabled()
            and not torch.compiler.is_compiling()
            and not any(isinstance(m, HookPoint) and m.active for m in self.modules())
        )


# [((mask, token_mask, (their versions, causal)), its Packing or None)], replaced whole
_LAST: list = [((None, None, None), None)]


def packing_of(mask: Tensor, token_mask: Tensor, causal: bool) -> Packing | None:
    """The Packing of a padded batch whose mask hides the padding, else None. Every block of
    a stack gets the same two masks: the answer for the last pair is kept (with the tensors'
    versions, so a mask changed in place is looked at again) and the check runs once a pass.
    Masks made under ``torch.inference_mode`` have no versions: they are checked every time."""
    tracked = not (mask.is_inference() or token_mask.is_inference())  # no version counter
    state = (mask._version, token_mask._version, causal) if tracked else None
    (held_mask, held_token_mask, held_state), held = _LAST[0]
    if tracked and held_mask is mask and held_token_mask is token_mask and held_state == state:
        return held
    packing = None
    if not bool(token_mask.all()) and hides_padding(mask, token_mask, causal):
        packing = Packing.from_mask(token_mask)
    if tracked:
        _LAST[0] = ((mask, token_mask, state), packing)
    return packing


def packed_block(block: EncoderBlock, x: Tensor, mask, causal, rope, packing: Packing) -> Tensor:
    """EncoderBlock's formula on the packed tokens x (N, C) -> (N, C), in eval mode (dropout
    is the identity) with no hook attached (nn/blocks.py has the hooked form)."""
    attn = block.attn

    def attention(u: Tensor) -> Tensor:
        return packed_attention(attn, u, mask, causal, block.graph, rope, packing)

    if block.norm_first:  # pre-norm: X ← X + MHAttention(LN(X)); X ← X + MLP(LN(X))
        x = x + attention(block.ln1(x))
        return x + block.mlp(block.ln2(x))
    x = block.ln1(x + attention(x))  # post-norm: X ← LN(X + MHAttention(X)) ...
    return block.ln2(x + block.mlp(x))


def packed_attention(
    attn: MultiHeadAttention, x: Tensor, mask, causal, graph, rope, packing: Packing
) -> Tensor:
    """MultiHeadAttention's self-attention on the packed tokens x (N, C) -> (N, C): the
    projections on the real tokens, Eq. (1) on the (B, T) layout."""
    b, t = packing.batch, packing.length
    h, h_kv, d = attn.n_head, attn.n_kv_head, attn.head_dim
    if attn.scores == "separate":  # one matmul, one unpack for [Q K V]
        qkv = packing.unpack(attn.in_proj(x))  # (B, T, (H + 2 H_kv) D), zeros at the padding
        q, k, v = qkv.split([h * d, h_kv * d, h_kv * d], dim=-1)
    else:  # "shared", "dot": q and k are one tensor (nn/qk_projections.py)
        qk, _, v = self_projections(attn, x)
        q = k = packing.unpack(qk)
        v = packing.unpack(v)
    q = q.view(b, t, h, d).transpose(1, 2)  # (B, H, T, D)
    k = k.view(b, t, h_kv, d).transpose(1, 2)  # (B, H_kv, T, D)
    v = v.view(b, t, h_kv, d).transpose(1, 2)
    if rope is not None:
        q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
    z, _ = attend(q, k, v, mask, causal=causal, graph=graph)  # (B, H, T, D)
    z = z.transpose(1, 2).reshape(b, t, h * d)  # (B, T, C): heads side by side
    return attn.out_proj(packing.pack(z))  # (N, C)


def hides_padding(mask: Tensor, token_mask: Tensor, causal: bool) -> bool:
    """Does no real query see a padded key? Only then may packing drop the padded tokens:
    their keys and values would otherwise take part in the real tokens' attention."""
    b, t = token_mask.shape
    # broadcastable to (B, H, T, T): True where a query may see a key (additive: not -inf)
    seen = mask if mask.dtype == torch.bool else mask > float("-inf")
    if causal:
        seen = seen & torch.ones(t, t, dtype=torch.bool, device=mask.device).tril()
    real_query = token_mask.view(b, 1, t, 1)
    padded_key = ~token_mask.view(b, 1, 1, t)
    return not bool((seen & real_query & padded_key).any())
