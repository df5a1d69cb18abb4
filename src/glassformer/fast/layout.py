"""A weight layout for decoding: every nn.Linear weight stored input-major while generating.

A cached decoding step multiplies one row per sequence by every weight matrix, y = x Wᵀ with
W of shape (out, in). With so few rows the product reads all of W for very little arithmetic,
so it runs at the speed W streams from memory; on CPU (MKL) that is markedly faster when W is
stored input-major, Wᵀ contiguous (the layout of GPT-2's Conv1D), than in nn.Linear's one row
per output. Measured on the 2-core development machine, one thread, one row: the 48 block
matrices of GPT-2 small take 27 ms instead of 34 ms; a whole GPT-2 small step 35 ms instead of
42 ms. With 8 rows or more the two layouts run alike. Re-measured on the AMD EPYC development
machine (2 threads, paired rounds): a GPT-2 small step 31.3 ms instead of 40.7 ms (1.31x).
Re-laying the weights costs about 240-270 ms there, what some 30 steps save (a 32-token
generation measured 0.97x with it), so generation re-lays them (``pays``) only for at least
MIN_NEW_TOKENS = 64 new tokens.

``input_major_weights(model)`` re-stores each weight that way for the duration of a generation:
same values, same shape (out, in), only the strides differ, so every formula and every
F.linear call is unchanged (results agree to float rounding, ~1e-7). The original tensors are
put back afterwards, exactly (the re-laid copies cost one more copy of the weights' memory while
generating). A weight shared by two modules (tied embeddings) is re-laid once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["MIN_NEW_TOKENS", "input_major_weights", "pays"]

MIN_NEW_TOKENS = 64


def pays(model: nn.Module, use_cache: bool, max_new_tokens: int) -> bool:
    """Re-lay ``model``'s weights for a generation? With its fast paths on, a KV cache (one
    row a step) and at least MIN_NEW_TOKENS steps to spread the copying over."""
    on = getattr(model, "fast_paths", False)
    return on and use_cache and max_new_tokens >= MIN_NEW_TOKENS


@contextmanager
def input_major_weights(model: nn.Module, enabled: bool = True) -> Iterator[None]:
    """Store every nn.Linear weight of ``model`` as a transposed contiguous tensor inside the
    block; restore the original tensors when it exits."""
    saved: list[tuple[nn.Parameter, torch.Tensor]] = []
    if enabled:
        seen: set[int] = set()
        with torch.no_grad():
            for module in model.modules():
                w = getattr(module, "weight", None) if isinstance(module, nn.Linear) else None
                if w is None or id(w) in seen or w.dim() != 2 or not w.is_contiguous():
                    continue
                seen.add(id(w))
                saved.append((w, w.data))
                w.data = w.data.t().contiguous().t()  # (out, in), strides (1, out)
    try:
        yield
    finally:
        for w, data in saved:
            w.data = data
