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

Each head's query, key, value or attention pattern can be patched the same way
(``patch_heads(..., activation="q")``); patching_every.py patches several points in one call
(TransformerLens's ``get_act_patch_block_every``), path_patching.py one path between two
components. Every grid shows its runs on a progress bar (``progress``, _patch_runs.py).

    metric = lambda out: out.logits[0, -1, mary] - out.logits[0, -1, john]
    grid = patch_residual(model, clean_ids, corrupted_ids, metric)     # (L, T)
    heads = patch_heads(model, clean_ids, corrupted_ids, metric)       # (L, H)
    pattern = patch_heads(model, clean_ids, corrupted_ids, metric, activation="pattern")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from torch import Tensor

from ._patch_runs import Cell, Metric, normalized, patched
from ._sites import Input, Stack, find_stack

__all__ = ["normalized", "patch_heads", "patch_residual"]


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
    progress: bool | None = None,
) -> Tensor:
    """The metric of the corrupted run with ``blocks.{l}.hook_{hook}`` at position t taken
    from the clean run, for each layer l and position t: a tensor (L, T); with
    ``per_position=False`` the whole layer's activation at once (all positions): (L,).

    clean, corrupted: inputs of the same shape (ids, a dict of the model's arguments or a
        tuple of them).
    metric: the model's output -> a scalar (a one-element tensor or a float).
    hook: ``"resid_pre"`` | ``"attn_out"`` | ``"resid_mid"`` | ``"mlp_out"`` |
        ``"resid_post"``, and ``"cross_attn_out"`` | ``"resid_mid_cross"`` in a decoder with
        cross-attention.
    stack: ``"encoder"`` | ``"decoder"`` (None: the decoder when the model has one); T is
        that stack's length.
    normalize: return (m − m_corrupted) / (m_clean − m_corrupted) instead of m.
    progress: a progress bar over the runs: True, False, or None (on a terminal or in a
        notebook).
    """
    where = find_stack(model, stack)
    names = [where.point(layer, hook) for layer in range(len(where))]
    cells = residual_cells(names, per_position)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {hook}",
    )  # fmt: skip
    return values.reshape(len(names), *residual_grid(shapes[names[0]], per_position))


def patch_heads(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    *,
    activation: str = "z",
    kind: str = "self",
    stack: str | None = None,
    per_position: bool = False,
    per_source: bool = False,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """The metric of the corrupted run with one head's ``activation`` (all positions) taken
    from the clean run, for each layer and head: a tensor (L, H); with ``per_position=True``
    one head at one position at a time: (L, H, T).

    activation: ``"z"`` (the head's weighted sum, what it writes through W^O: TransformerLens's
        "attn_head_out") | ``"q"`` | ``"k"`` | ``"v"`` (before any rotary rotation; with
        grouped-query attention k and v have the key/value heads: (L, H_kv, ...)) |
        ``"pattern"`` (the weights A (B, H, T, S); per position: each query position's row,
        and with ``per_source=True`` each weight A_ts alone: (L, H, T, S)).
    kind: ``"self"`` | ``"cross"`` (the cross-attention heads of an encoder-decoder's decoder;
        their k and v have the source's positions).
    The other arguments are those of ``patch_residual``.

    TransformerLens's ``get_act_patch_attn_head_{out,q,k,v,pattern}_all_pos`` give the
    (L, H) grids; its ``..._by_pos`` functions give (L, T, H) for z, q, k, v, the transpose
    of this one's (L, H, T), and (L, H, T) for the pattern; its
    ``get_act_patch_attn_head_pattern_dest_src_pos`` is ``per_source=True``.
    """
    where = find_stack(model, stack)
    where.check_kind(kind)
    names = head_names(where, kind, activation)
    if per_source and not (activation == "pattern" and per_position):
        raise ValueError(
            "per_source=True patches one attention weight A_ts at a time: it needs "
            f"activation='pattern' and per_position=True; got activation={activation!r}, "
            f"per_position={per_position}"
        )
    cells = head_cells(names, activation, per_position, per_source)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {activation} per head",
    )  # fmt: skip
    grid = head_grid(shapes[names[0]], activation, per_position, per_source)
    return values.reshape(len(names), *grid)


def residual_cells(names: Sequence[str], per_position: bool) -> Callable[..., Iterator[Cell]]:
    """The cells of a (B, T, C) point per layer: each position, or the whole tensor."""

    def cells(shapes: dict[str, tuple]) -> Iterator[Cell]:
        for name in names:
            if per_position:
                yield from ((name, (slice(None), p)) for p in range(shapes[name][1]))
            else:
                yield name, (slice(None),)

    return cells


def residual_grid(shape: tuple, per_position: bool) -> tuple[int, ...]:
    return (shape[1],) if per_position else ()


def head_cells(
    names: Sequence[str], what: str, per_position: bool, per_source: bool
) -> Callable[..., Iterator[Cell]]:
    """The cells of a head point per layer, in the order of ``head_grid``: q, k, v, z are
    (B, T, H, D), the pattern (B, H, T, S)."""
    every = slice(None)

    def cells(shapes: dict[str, tuple]) -> Iterator[Cell]:
        for name in names:
            shape = shapes[name]
            if what == "pattern":
                for h in range(shape[1]):
                    if not per_position:
                        yield name, (every, h)
                    elif not per_source:
                        yield from ((name, (every, h, t)) for t in range(shape[2]))
                    else:
                        for t in range(shape[2]):
                            yield from ((name, (every, h, t, s)) for s in range(shape[3]))
            else:
                for h in range(shape[2]):
                    if per_position:
                        yield from ((name, (every, t, h)) for t in range(shape[1]))
                    else:
                        yield name, (every, every, h)

    return cells


def head_grid(shape: tuple, what: str, per_position: bool, per_source: bool) -> tuple[int, ...]:
    """The shape of one layer's grid: (H,), (H, T) or (H, T, S)."""
    if what == "pattern":
        return (shape[1], *shape[2 : 2 + per_position + per_source])
    return (shape[2], *((shape[1],) if per_position else ()))


def head_names(where: Stack, kind: str, what: str) -> list[str]:
    """``hook_{what}`` of the ``kind`` attention of every layer of the stack."""
    return [where.head_point(layer, kind, what) for layer in range(len(where))]
