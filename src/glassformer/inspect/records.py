"""What ``capture`` records: one entry per attention call, per residual step, per stack run.

Notation (as in glassformer.nn): B batch, H query heads, H_kv key/value heads, T query
length, S key length, D head size (d_k), C = d_model.

Every tensor is one the model computed, read at a hook point (glassformer.nn.hooks), detached
from the autograd graph; it stays on the model's device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["AttentionRecord", "ResidualRecord", "StackRecord"]


@dataclass(frozen=True)
class AttentionRecord:
    """One call of one attention layer, Eq. (1) as the model computed it.

    ``stack`` is the stack's attribute name in the model ("decoder", "encoder"), ``layer``
    the block's index in it, ``kind`` "self" (Eq. 4) or "cross" (Eq. 5), ``call`` the run of
    the stack during the capture it belongs to (0 for a plain forward pass; 1, 2, ... for the
    steps that follow with a KV cache).

    q: (B, H, T, D) the queries, after the rotary rotation when the model uses RoPE;
    k, v: (B, H_kv, S, D) every key and value attended to (with a KV cache: the cached ones,
        from the earlier calls of the capture, NaN where the cache was filled before it, and
        the T new ones, so the queries are the last T of S positions);
    mask: the mask Eq. (1) applied, causal part included: bool (True = may attend) or an
        additive float mask, (B, H, T, S) as the hook point ``hook_mask`` saw it;
    weights: A (B, H, T, S), A_nm = e^{â_nm} / Z_n (Eq. 3), before any dropout; a row with
        nothing to attend to is all zeros;
    causal: whether the causal mask was part of ``mask`` (a Decoder's self-attention, or a
        mask that hides every later key).
    """

    stack: str
    layer: int
    kind: str
    call: int
    q: Tensor
    k: Tensor
    v: Tensor
    mask: Tensor | None
    weights: Tensor
    causal: bool

    @property
    def offset(self) -> int:
        """S - T for self-attention: the positions cached before this call (0 without cache)."""
        return self.k.shape[2] - self.q.shape[2] if self.kind == "self" else 0

    @property
    def scale(self) -> float:
        """1/√d_k, the factor of Eq. (2)."""
        return 1.0 / math.sqrt(self.q.shape[-1])

    @property
    def allowed(self) -> Tensor:
        """(B, H, T, S) bool: True where query n may attend to key m (b_nm = 0)."""
        shape = tuple(self.weights.shape)
        if self.mask is None:
            return torch.ones(shape, dtype=torch.bool, device=self.weights.device)
        keep = self.mask if self.mask.dtype == torch.bool else self.mask > float("-inf")
        return keep.expand(shape)

    def scores(self) -> Tensor:
        """â (B, H, T, S): a_nm = q_nᵀ k_m / √d_k (Eq. 2) plus the mask (-inf where masked)."""
        k = self.k
        if k.shape[1] != self.q.shape[1]:  # grouped-query: each key head serves G query heads
            k = k.repeat_interleave(self.q.shape[1] // k.shape[1], dim=1)  # (B, H, S, D)
        a = (self.q.double() @ k.double().transpose(-2, -1)) * self.scale  # (B, H, T, S)
        if self.mask is not None and self.mask.dtype != torch.bool:
            return a + self.mask.double()
        return a.masked_fill(~self.allowed, float("-inf"))

    def recompute(self) -> Tensor:
        """A from the recorded Q and K by Eq. (1) (in float64): softmax of ``scores()`` over
        the allowed keys; rows with no allowed key are zeros. Compare with ``weights``."""
        a = self.scores()
        dead = a.amax(dim=-1, keepdim=True) == float("-inf")  # (B, H, T, 1)
        w = a.masked_fill(dead, 0.0).softmax(dim=-1).masked_fill(dead, 0.0)
        return w.to(self.weights.dtype)


@dataclass(frozen=True)
class ResidualRecord:
    """One sub-layer of one block: how it changed the residual stream.

    ``sublayer`` is "self_attn", "cross_attn" or "ff". ``before`` (B, T, C) is the stream the
    sub-layer read, ``update`` (B, T, C) what it added (the sub-layer's output, after
    dropout), ``after`` (B, T, C) the stream it left:

        pre-norm  (norm_first=True):   after = before + update,       update = F(Norm(before))
        post-norm (norm_first=False):  after = Norm(before + update), update = F(before)
    """

    stack: str
    layer: int
    sublayer: str
    call: int
    norm_first: bool
    before: Tensor
    update: Tensor
    after: Tensor

    @property
    def update_norm(self) -> Tensor:
        """(B, T): ‖update‖₂ of each token, the size of what the sub-layer wrote."""
        return self.update.norm(dim=-1)

    @property
    def after_norm(self) -> Tensor:
        """(B, T): ‖after‖₂ of each token."""
        return self.after.norm(dim=-1)


@dataclass(frozen=True)
class StackRecord:
    """The end of one run of a stack (Encoder or Decoder).

    ``last`` (B, T, C) is the last block's output, the residual stream before any final norm
    (equal to the last ResidualRecord's ``after``); ``output`` (B, T, C) is what the stack
    returned: Norm(last) when it has a final norm (``final_norm``), else ``last`` itself.
    ``output`` is the model's ``hidden_states`` (decoder-only, encoder-only, the decoder of an
    encoder-decoder) or ``encoder_hidden_states`` (the encoder of an encoder-decoder).
    """

    stack: str
    call: int
    final_norm: bool
    last: Tensor
    output: Tensor
