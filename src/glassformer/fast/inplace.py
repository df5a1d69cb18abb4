"""The feed-forward activation written over its input where no autograd graph is recorded.

Inference (eval, ``torch.no_grad`` / ``inference_mode``) needs the hidden layer
H = W_1 x + b_1 only once, so a(H) can overwrite H instead of allocating a new (B, T, d_ff)
tensor. On CPU a fresh tensor of a megabyte or more is often fresh memory from the operating
system, zero-filled page by page on first write. ``python -m benchmarks.bench_fast_paths``
measures what it earns (docs/benchmarks.md, "CPU fast paths").

``InplaceFeedForward`` is FeedForward with that one change; ``glassformer.fast`` gives it to
the models. It falls back to FeedForward's own forward while gradients are recorded (autograd
needs H), for the gated swiglu (two halves, not one element-wise map) and while a hook reads
``hook_pre`` (a hook may keep the H it saw).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..nn import FeedForward

__all__ = ["InplaceFeedForward"]

_IN_PLACE = {
    "relu": torch.relu_,  # max(0, h)
    "gelu": lambda h: torch.ops.aten.gelu_(h, approximate="none"),  # h Φ(h)
    "gelu_tanh": lambda h: torch.ops.aten.gelu_(h, approximate="tanh"),  # GPT-2's GELU
}


class InplaceFeedForward(FeedForward):
    """FeedForward(X) = W_2 a(W_1 X + b_1) + b_2 with a(·) written over W_1 X + b_1."""

    def forward(self, x: Tensor) -> Tensor:
        if torch.is_grad_enabled() or self.activation not in _IN_PLACE or self.hook_pre.active:
            return super().forward(x)
        h = _IN_PLACE[self.activation](self.fc1(x))  # (B, T, d_ff): a(H), in H's memory
        h = self.hook_post(h)
        if self.training:  # dropout is the identity in eval mode
            h = self.dropout(h)
        return self.fc2(h)  # (B, T, C)
