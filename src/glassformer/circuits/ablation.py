"""Ablation: take a head, a feed-forward or positions of the residual stream out of a forward
pass, and see what the output loses.

"Brief Notes on Transformers" writes the attention layer as a sum of heads, H(x) = Σ_j h_j(x),
added to the residual stream, x1 = H(x0) + x0, and the MLP likewise, x2 = MLP(x1) + x1. Each
term can be removed, or replaced by a typical value, and the change in the output measures what
the term did (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits", read
heads as such independent additive terms).

Where each ablation acts:

- a head at ``hook_z`` (B, T, H, D): z_h = Σ_m A_nm v_m, before W^O. Zeroing z_h removes the
  head's term z_h W^O_h from the layer's output (the value bias too: the rows of A sum to 1, so
  b^V reaches z_h whole) but leaves the output bias b^O, which belongs to no head. It equals
  zeroing the head's D columns of ``out_proj.weight``.
- a feed-forward at ``hook_mlp_out`` (B, T, C): W_2 a(W_1 x + b_1) + b_2, bias included.
- the residual stream, or what a sub-layer writes into it, at ``hook_{at}`` (B, T, C) of a
  layer (``at`` = resid_pre, resid_mid, resid_post, attn_out, mlp_out, and cross_attn_out,
  resid_mid_cross in a decoder with cross-attention).

``positions`` restricts any of them to those positions (T of the stack; negative counts from
the end). What replaces the activation (``how``):

- ``"zero"``: 0.
- ``"mean"``: its mean over a ``reference`` batch and over that batch's positions (the real
  tokens only when the reference is a dict with an attention mask): one vector per head or
  per layer, computed once, from one run of the model on the reference.
- ``"resample"``: its value in a run on ``reference`` (an input of the same shape), position
  by position.

    hooks = ablation_hooks(model, heads=[(1, 0)], how="mean", reference=batch)
    out = model.run_with_hooks(ids, hooks=hooks)        # or: with model.hooks(hooks): ...
    out = ablate(model, ids, heads=[(1, 0)])            # the same, zero-ablated, in one call
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from ..models.base import eval_mode
from ..nn.hooks import HookFn, HookPoint
from ._sites import Input, Stack, call, find_stack, real_tokens

__all__ = ["HOW", "ablate", "ablation_hooks"]

HOW = ("zero", "mean", "resample")


def ablation_hooks(
    model,
    *,
    heads: Iterable[tuple[int, int]] = (),
    mlps: Iterable[int] = (),
    resid: Iterable[int] = (),
    at: str = "resid_pre",
    positions: int | Iterable[int] | None = None,
    how: str = "zero",
    reference: Input | None = None,
    kind: str = "self",
    stack: str | None = None,
) -> list[tuple[str, HookFn]]:
    """The hooks ``[(name, fn)]`` that ablate, for ``model.run_with_hooks`` or ``model.hooks``.

    heads: ``(layer, head)`` pairs, ablated at ``hook_z`` of the ``kind`` attention
        (``"self"``, or ``"cross"`` in the decoder of an encoder-decoder).
    mlps: layers whose feed-forward output ``hook_mlp_out`` is ablated.
    resid: layers whose ``hook_{at}`` (the residual stream or a sub-layer's output) is ablated.
    positions: the positions ablated (None: all).
    how: ``"zero"`` | ``"mean"`` | ``"resample"`` (the module docstring says what each puts in).
    reference: the input the mean or the resampled values come from (ids, a dict of the
        model's arguments, or a tuple of them); run once here, without gradients, in eval mode.
    stack: ``"encoder"`` | ``"decoder"`` (None: the decoder when the model has one).
    """
    if how not in HOW:
        raise ValueError(f"how={how!r} is not known; choose one of {list(HOW)}")
    where = find_stack(model, stack)
    sites: list[tuple[str, list[int] | None]] = []  # (hook name, heads on axis 2 or None)
    by_layer: dict[int, list[int]] = {}
    for layer, head in _pairs(heads):
        where.check_kind(kind)
        by_layer.setdefault(layer, []).append(where.check_head(layer, head, kind)[1])
    sites += [(where.z(layer, kind), hs) for layer, hs in sorted(by_layer.items())]
    sites += [(where.point(layer, "mlp_out"), None) for layer in _ints(mlps, "mlps")]
    sites += [(where.point(layer, at, "at"), None) for layer in _ints(resid, "resid")]
    if not sites:
        raise ValueError(
            "nothing to ablate: give heads=[(layer, head)], mlps=[layer] or resid=[layer]"
        )
    index = None if positions is None else _ints(positions, "positions")
    sources = _sources(model, [name for name, _ in sites], how, reference, where)
    return [(name, _replacer(index, hs, how, sources.get(name))) for name, hs in sites]


def ablate(model, inputs: Input, **options: Any) -> Any:
    """The model's output on ``inputs`` (ids, a dict of its arguments or a tuple of them) with
    the ablation ``options`` describe (those of ``ablation_hooks``) in place."""
    with model.hooks(ablation_hooks(model, **options)):
        return call(model, inputs)


def _sources(model, names: list[str], how: str, reference: Input | None, where: Stack) -> dict:
    """Hook name -> the mean (per head (H, D) or (C,)) or the resampled tensor."""
    if how == "zero":
        return {}
    if reference is None:
        raise ValueError(
            f"how={how!r} needs reference=: the input whose activations give the "
            f"{'means' if how == 'mean' else 'resampled values'}"
        )
    with torch.no_grad(), eval_mode(model):
        _, cache = call(model.run_with_cache, reference, names=sorted(set(names)))
    if how == "resample":
        return dict(cache)
    real = real_tokens(reference, where)
    return {name: _mean(x, real) for name, x in cache.items()}


def _mean(x: Tensor, real: Tensor | None) -> Tensor:
    """x (B, T, ...) averaged over the batch and the (real) positions -> (...)."""
    if real is None:
        return x.mean((0, 1))
    w = real.to(x.dtype).reshape(*real.shape, *(1,) * (x.dim() - 2))  # (B, T, 1, ...)
    return (x * w).sum((0, 1)) / w.sum()


def _replacer(index: list[int] | None, heads: list[int] | None, how: str, source) -> HookFn:
    def replace(x: Tensor, hook: HookPoint) -> Tensor:
        pos = _checked(index, x.shape[1], hook.name)
        if how == "resample" and source.shape != x.shape:
            raise ValueError(
                f"how='resample': the reference's {hook.name} has shape {tuple(source.shape)}, "
                f"the input's {tuple(x.shape)}; the reference must have the input's shape"
            )
        x = x.clone()  # a new tensor: autograd may still need x
        for head in heads or [None]:
            at = (slice(None), pos) if head is None else (slice(None), pos, head)
            if how == "zero":
                x[at] = 0.0
            elif how == "mean":
                x[at] = source if head is None else source[head]
            else:
                x[at] = source[at]
        return x

    return replace


def _checked(index: list[int] | None, t: int, name: str) -> slice | list[int]:
    if index is None:
        return slice(None)
    bad = [p for p in index if not -t <= p < t]
    if bad:
        raise ValueError(
            f"positions {bad} are out of range at {name}, which has {t} positions "
            f"(0 to {t - 1}, or -{t} to -1 from the end)"
        )
    return index


def _pairs(heads) -> list[tuple[int, int]]:
    """``heads`` as a list of (layer, head) pairs; one pair alone is accepted too."""
    heads = list(heads)
    if len(heads) == 2 and all(isinstance(h, int) for h in heads):
        heads = [tuple(heads)]
    for pair in heads:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise ValueError(f"heads: each is a (layer, head) pair; got {pair!r}")
    return [tuple(pair) for pair in heads]


def _ints(values, what: str) -> list[int]:
    values = [values] if isinstance(values, int) else list(values)
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"{what}: each is an int; got {v!r}")
    return values
