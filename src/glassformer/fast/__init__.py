"""CPU fast paths: modules that compute what the reference modules of glassformer.nn compute,
in ways that run faster on a CPU, put in their place by one choice.

The reference code in glassformer.nn computes each formula once, as the notes write it, with
torch's own kernels, and knows nothing of this package. Where a CPU-specific form was measured
to earn its keep, it lives here as a subclass of the reference module that overrides
``forward`` alone (same parameters, same buffers, same state dict):

    PackedEncoderBlock  (packing.py)  inference on a padded batch runs the position-wise work
                                      on the real tokens only

``use_fast_paths(module, True)`` gives every EncoderBlock under ``module`` its fast class;
``use_fast_paths(module, False)`` gives them back exactly the reference classes. The models
call it when they are built (``model.use_fast_paths(on)``). Generation with a KV cache also
stores the weights input-major while it decodes (layout.py), when the model's fast paths
are on. Each fast form checks the
conditions it was measured under and otherwise runs the reference ``forward``, so the results
agree with the reference code to float rounding, in values and gradients (tests/fast,
tests/models/test_hooks.py); none runs where a hook is attached that would see a difference.
What each path earns is measured by ``python -m benchmarks.bench_fast_paths``; a path that
stops earning 5% on the benchmark that motivated it is deleted.
"""

from __future__ import annotations

from torch import nn

from ..nn import EncoderBlock
from .packing import PackedEncoderBlock

__all__ = ["FAST_FORMS", "use_fast_paths"]

FAST_FORMS: dict[type[nn.Module], type[nn.Module]] = {EncoderBlock: PackedEncoderBlock}
_REFERENCE = {fast: reference for reference, fast in FAST_FORMS.items()}


def use_fast_paths(module: nn.Module, on: bool = True) -> nn.Module:
    """Give every sub-module of ``module`` its fast class (``on``) or its reference class back;
    returns ``module``. Records the choice as ``module.fast_paths``."""
    for m in module.modules():
        if on and type(m) in FAST_FORMS:
            m.__class__ = FAST_FORMS[type(m)]
        elif not on and type(m) in _REFERENCE:
            m.__class__ = _REFERENCE[type(m)]
    module.fast_paths = on
    return module
