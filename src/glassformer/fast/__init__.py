"""CPU fast paths: the same functions as the reference modules in glassformer.nn, computed in
ways that run faster on a CPU.

The reference code in glassformer.nn computes each formula once, as the notes write it, with
torch's own kernels. Where a CPU-specific form was measured to earn its keep, it lives here,
and a model takes the whole set by one choice, made once:

    model.use_fast_paths(True)     # the models' default; False runs the reference code only
    use_fast_paths(module, on)     # the same for any module built from glassformer.nn

which sets, on every module it applies to:

  * Encoder.packed = packing.encode: inference on the real tokens of a padded batch
    (packing.py);
  * FeedForward.act = inplace.activation(...) and the blocks' residual ``add`` = inplace.add:
    without an autograd graph, the activation and the residual sum overwrite fresh tensors
    instead of allocating new ones (inplace.py);

and generation, with the cache, stores the weights input-major while it decodes (layout.py).
Each fast form checks the shapes, dtype and device it was measured on and hands everything
else to the reference function, so the results agree with the reference code to float
rounding, in values and gradients (tests/fast, tests/models/test_hooks.py). None of them
runs where a hook is attached that would see the difference: packing waits while any hook is
attached to the encoder, and nothing a hook has seen is written over. What each path earns is
measured by ``python -m benchmarks.bench_fast_paths``; a path that stops earning 5% on the
benchmark that motivated it is deleted.
"""

from __future__ import annotations

import torch
from torch import nn

from ..nn import Encoder, FeedForward
from ..nn.blocks import DecoderBlock, EncoderBlock
from ..nn.feedforward import activation_fn
from . import inplace, packing

__all__ = ["use_fast_paths"]


def use_fast_paths(module: nn.Module, on: bool = True) -> nn.Module:
    """Switch every sub-module of ``module`` to its fast form (``on``) or back to the
    reference code; returns ``module``. Records the choice as ``module.fast_paths``."""
    for m in module.modules():
        if isinstance(m, FeedForward) and m.activation != "swiglu":
            m.act = inplace.activation(m.activation) if on else activation_fn(m.activation)
        elif isinstance(m, EncoderBlock | DecoderBlock):
            m.add = inplace.add if on else torch.add
        elif isinstance(m, Encoder):
            m.packed = packing.encode if on else None
    module.fast_paths = on
    return module
