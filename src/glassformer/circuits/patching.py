"""Activation patching: which activation carries the information that makes a clean run's
prediction differ from a corrupted run's?

Run the model on a clean input (say "When Mary and John went out, John gave a drink to") and
on a corrupted one that differs where it matters ("... Mary gave a drink to"), both of the same
shape. Then run the corrupted input again with one activation (one layer's residual stream at
one position, or one head's z) replaced by its value in the clean run, and read a ``metric`` of
the output, a scalar such as the logit difference of " Mary" and " John" at the last position.
Where the patched metric moves from the corrupted value to the clean one, that activation
carries what the clean run knew. The residual stream is the sum the layers write into ("Brief
Notes on Transformers": x1 = H(x0) + x0, x2 = MLP(x1) + x1, H(x) = Σ_j h_j(x)), so patching it
position by position traces where the information sits, layer after layer; patching a head's
z_h tests the one term h_j (Elhage et al., 2021, "A Mathematical Framework for Transformer
Circuits").

The clean run is made once, caching only the points patched; then one corrupted run per cell
of the result, without gradients, in eval mode (the model's mode is restored after).
``normalize=True`` (or ``normalized``) rescales the metric so that 0 is the corrupted run's
value and 1 the clean run's.

    metric = lambda out: out.logits[0, -1, mary] - out.logits[0, -1, john]
    grid = patch_residual(model, clean_ids, corrupted_ids, metric)     # (L, T)
    heads = patch_heads(model, clean_ids, corrupted_ids, metric)       # (L, H)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

from ..models.base import eval_mode
from ..nn.hooks import HookFn, HookPoint
from ._sites import Input, call, find_stack, input_shapes

__all__ = ["normalized", "patch_heads", "patch_residual"]

Metric = Callable[[Any], Tensor | float]
Cell = tuple[str, tuple]  # (hook name, index into its tensor)


def patch_residual(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    *,
    hook: str = "resid_pre",
    stack: str | None = None,
    per_position: bool = True,
    normalize: bool = False,
) -> Tensor:
    """The metric of the corrupted run with ``blocks.{l}.hook_{hook}`` at position t taken
    from the clean run, for each layer l and position t: a tensor (L, T); with
    ``per_position=False`` the whole layer's activation at once: (L,).

    clean, corrupted: inputs of the same shape (ids, a dict of the model's arguments or a
        tuple of them).
    metric: the model's output -> a scalar (a one-element tensor or a float).
    hook: ``"resid_pre"`` | ``"attn_out"`` | ``"resid_mid"`` | ``"mlp_out"`` |
        ``"resid_post"``, and ``"cross_attn_out"`` | ``"resid_mid_cross"`` in a decoder with
        cross-attention.
    stack: ``"encoder"`` | ``"decoder"`` (None: the decoder when the model has one); T is
        that stack's length.
    normalize: return (m − m_corrupted) / (m_clean − m_corrupted) instead of m.
    """
    where = find_stack(model, stack)
    names = [where.point(layer, hook) for layer in range(len(where))]

    def cells(t: int) -> Iterator[Cell]:
        for name in names:
            if per_position:
                yield from ((name, (slice(None), p)) for p in range(t))
            else:
                yield name, (slice(None),)

    values, t = _patched(model, clean, corrupted, metric, names, cells, normalize)
    return values.reshape(len(names), t) if per_position else values


def patch_heads(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    *,
    kind: str = "self",
    stack: str | None = None,
    per_position: bool = False,
    normalize: bool = False,
) -> Tensor:
    """The metric of the corrupted run with one head's z (``hook_z``, all positions) taken from
    the clean run, for each layer and head: a tensor (L, H); with ``per_position=True`` one
    head at one position at a time: (L, H, T).

    kind: ``"self"`` | ``"cross"`` (the cross-attention heads of an encoder-decoder's decoder).
    The other arguments are those of ``patch_residual``.
    """
    where = find_stack(model, stack)
    where.check_kind(kind)
    names = [where.z(layer, kind) for layer in range(len(where))]
    n_head = where.n_head(0, kind)

    def cells(t: int) -> Iterator[Cell]:
        for name in names:
            for h in range(n_head):
                if per_position:
                    yield from ((name, (slice(None), p, h)) for p in range(t))
                else:
                    yield name, (slice(None), slice(None), h)

    values, t = _patched(model, clean, corrupted, metric, names, cells, normalize)
    return values.reshape(len(names), n_head, *((t,) if per_position else ()))


def normalized(metric: Metric, clean_value: float | Tensor, corrupted_value: float | Tensor):
    """``metric`` rescaled to 0 at the corrupted run and 1 at the clean one:
    out -> (metric(out) − corrupted_value) / (clean_value − corrupted_value)."""
    clean_value, corrupted_value = float(clean_value), float(corrupted_value)
    if clean_value == corrupted_value:
        raise ValueError(
            f"normalized: the clean and corrupted values are both {clean_value}; the metric "
            "does not tell the two runs apart, so there is nothing to rescale"
        )
    span = clean_value - corrupted_value
    return lambda out: (_scalar(metric(out)) - corrupted_value) / span


def _patched(model, clean, corrupted, metric, names, cells, normalize) -> tuple[Tensor, int]:
    """The metric of one corrupted run per cell, each with that cell taken from the clean
    run (cached once): a flat tensor, and the stack's length T."""
    if input_shapes(clean) != input_shapes(corrupted):
        raise ValueError(
            "clean and corrupted must have the same shapes; got clean "
            f"{input_shapes(clean)} and corrupted {input_shapes(corrupted)}"
        )
    with torch.no_grad(), eval_mode(model):
        clean_out, cache = call(model.run_with_cache, clean, names=names)
        if normalize:  # the corrupted baseline, through the same (hooked) path
            corrupted_out, _ = call(model.run_with_cache, corrupted, names=names)
            metric = normalized(metric, _scalar(metric(clean_out)), _scalar(metric(corrupted_out)))
        t = cache[names[0]].shape[1]
        values = []
        for name, index in cells(t):
            out = call(model.run_with_hooks, corrupted, hooks=[(name, _put(cache[name], index))])
            values.append(_scalar(metric(out)))
    return torch.stack(values), t


def _put(source: Tensor, index: tuple) -> HookFn:
    def patch(x: Tensor, hook: HookPoint) -> Tensor:
        x = x.clone()
        x[index] = source[index]
        return x

    return patch


def _scalar(value) -> Tensor:
    value = torch.as_tensor(value)
    if value.numel() != 1:
        raise ValueError(
            f"metric must return one number (a scalar tensor or a float); got shape "
            f"{tuple(value.shape)}"
        )
    return value.detach().reshape(())
