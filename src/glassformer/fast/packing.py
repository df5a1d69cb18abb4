"""Packing the real tokens of a padded batch, so that position-wise work skips the padding.

Everything in an encoder block but attention itself acts on each position alone: the Q/K/V
and output projections, the feed-forward MLP, the residual additions and the norms. On a
padded batch those can run on the N real tokens only, (B, T, C) -> (N, C), and only
attention needs the (B, T) layout back, with zeros at the padding, which its padding mask
hides anyway. The result at every real token is unchanged; the work shrinks to N / (B T).
``encode`` is the Encoder's ``packed`` with the fast paths on: inference (no gradients, eval
mode) on CPU, with no hook attached; the padded positions of its output are then zero instead
of values nothing should read. A mask that lets a real query see a padded key (a full mask, a
graph's) takes the ordinary path: the padded tokens' keys and values count there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["Packing", "encode"]


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


def encode(encoder, x: Tensor, mask, causal: bool, token_mask, rope) -> Tensor | None:
    """The Encoder stack's forward pass on the real tokens of x (B, T, C) -> (B, T, C), or
    None where packing does not apply (training, gradients, no padding, a mask that shows
    padded keys to real queries, a hook attached)."""
    if not _applies(encoder, x, mask, token_mask) or not _hides_padding(mask, token_mask, causal):
        return None
    packing = Packing.from_mask(token_mask)
    x = packing.pack(x)  # (N, C): every row real, so the norms need no token_mask
    for block in encoder.blocks:
        x = block(x, mask, causal=causal, rope=rope, packing=packing)
    return packing.unpack(x if encoder.ln_final is None else encoder.ln_final(x, None))


def _applies(encoder, x: Tensor, mask, token_mask) -> bool:
    return (
        token_mask is not None
        and mask is not None
        and x.device.type == "cpu"
        and not encoder.training
        and not torch.is_grad_enabled()
        and not torch.compiler.is_compiling()
        and not bool(token_mask.all())
        and not encoder.hooked()
    )


def _hides_padding(mask: Tensor, token_mask: Tensor, causal: bool) -> bool:
    """Does no real query see a padded key? Only then may packing drop the padded tokens:
    their keys and values would otherwise take part in the real tokens' attention."""
    b, t = token_mask.shape
    seen = mask.bool()  # broadcastable to (B, H, T, T)
    if causal:
        seen = seen & torch.ones(t, t, dtype=torch.bool, device=mask.device).tril()
    real_query = token_mask.view(b, 1, t, 1)
    padded_key = ~token_mask.view(b, 1, 1, t)
    return not bool((seen & real_query & padded_key).any())
