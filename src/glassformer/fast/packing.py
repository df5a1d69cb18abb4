"""Packing the real tokens of a padded batch, so that position-wise work skips the padding.

Everything in a block but attention itself acts on each position alone: the Q/K/V and output
projections, the feed-forward MLP, the residual additions and the norms. On a padded batch
those can run on the N real tokens only, (B, T, C) -> (N, C), and only attention needs the
(B, T) layout back, with zeros at the padding, which its padding mask hides anyway. The result
at every real token is unchanged; the work shrinks to N / (B T).

This is a substitution of layout, not a second formula: ``packing_for`` gives a model's
forward a ``Packing`` when the caller chose the fast paths (``model.use_fast_paths()``, or
``with glassformer.fast.fast_paths(model):``) and the batch allows it; the model hands it to
the one loop over the blocks (nn/blocks.py ``run_blocks``), which packs x once, runs the same
``Block.forward`` on the (N, C) tokens (``MultiHeadAttention`` unpacks Q, K, V to attend) and
unpacks the result, zeros at the padding. It packs in inference (no gradients, eval mode) on
CPU with no hook attached and a padding mask that hides every padded key from every real
query; anything else runs on the (B, T) layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..nn.hooks import HookPoint

__all__ = ["Packing", "hides_padding", "packing_for"]


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


def packing_for(
    model: nn.Module, mask: Tensor | None, token_mask: Tensor | None, causal: bool = False
) -> Packing | None:
    """The Packing of this forward pass of ``model`` (checked once a pass, not per block),
    or None when it must run on the (B, T) layout: no padding, gradients or training (packing
    was measured in inference only), not on CPU, under torch.compile, a hook attached (hooks
    see (B, T, ...) tensors), or a mask that lets a real query see a padded key."""
    if token_mask is None or mask is None:
        return None
    if (
        token_mask.device.type != "cpu"
        or model.training
        or torch.is_grad_enabled()
        or torch.compiler.is_compiling()
        or bool(token_mask.all())
    ):
        return None
    if any(isinstance(m, HookPoint) and m.active for m in model.modules()):
        return None
    if not hides_padding(mask, token_mask, causal):
        return None
    return Packing.from_mask(token_mask)


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
