"""Packing the real tokens of a padded batch, so that position-wise work skips the padding.

Everything in an encoder block but attention itself acts on each position alone: the Q/K/V
and output projections, the feed-forward MLP, the residual additions and the norms. On a
padded batch those can run on the N real tokens only, (B, T, C) -> (N, C), and only
attention needs the (B, T) layout back, with zeros at the padding, which its padding mask
hides anyway. The result at every real token is unchanged; the work shrinks to N / (B T).
The encoder uses it for inference (no gradients, eval mode) on CPU; the padded positions of
its output are then zero instead of values nothing should read.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["Packing"]


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
