"""CPU fast paths: other ways to compute what the reference code of glassformer.nn computes,
which run faster on a CPU, chosen by the caller.

The reference code computes each formula once, as the notes write it. A fast path changes
how the same formula runs, never the formula: a model runs it only where its caller chose it,
``model.use_fast_paths()`` (off when a model is built), or for one block of code:

    with fast_paths(model):          # generation, evaluation, prediction
        out = model(ids, mask)

    packing    (packing.py)  inference on a padded batch: the blocks run on the real tokens
                             only (the model's forward asks ``packing_for`` once a pass)
    layout     (layout.py)   generation with a KV cache stores the weights input-major while
                             it decodes

Each checks the conditions it was measured under and otherwise leaves the reference layout,
so the results agree with the reference code to float rounding (tests/fast,
tests/models/test_hooks.py); none runs where a hook is attached that would see a difference.
What each path earns is measured by ``python -m benchmarks.bench_fast_paths``; a path that
stops earning 5% on the benchmark that motivated it is deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

__all__ = ["fast_paths"]


@contextmanager
def fast_paths(model: nn.Module, on: bool = True) -> Iterator[nn.Module]:
    """Inside, ``model`` takes its fast paths (``on``) or the reference code only, unless the
    model was told already (``model.use_fast_paths(False)`` keeps the reference code through
    every caller); put back on exit."""
    before = getattr(model, "fast_paths", None)
    model.fast_paths = on if before is None else before
    try:
        yield model
    finally:
        model.fast_paths = before
