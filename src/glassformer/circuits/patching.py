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

The clean and corrupted runs are made once, caching the points patched (and the corrupted
run's stream entering each block); then each cell of the result resumes the corrupted run at
its layer (and, in a causal stack, at its position: the earlier positions' keys and values
are the corrupted run's), and computes the logits where the metric reads them (_resume.py),
without gradients, in eval mode (the model's mode is restored after). The results are those
of a plain re-run of the corrupted input with the cell's hook (to float rounding).
``layers=``, ``heads=``, ``positions=`` compute a subset of a grid; a metric of one value per
prompt gives a grid with the prompts first.
``normalize=True`` (or ``normalized``) rescales the metric so that 0 is the corrupted run's
value and 1 the clean run's.

Each head's query, key, value or attention pattern can be patched the same way
(``patch_heads(..., activation="q")``); patching_every.py patches several points in one call
(TransformerLens's ``get_act_patch_block_every``), path_patching.py one path between two
components. Every grid shows its runs on a progress bar (``progress``, _patch_runs.py).

    metric = lambda out: out.logits[0, -1, mary] - out.logits[0, -1, john]
    grid = patch_residual(model, clean_ids, corrupted_ids, metric)     # (L, T)
    some = patch_residual(model, clean_ids, corrupted_ids, metric, layers=[0, 6],
                          positions=range(4, 9))                         # (2, 5)
    heads = patch_heads(model, clean_ids, corrupted_ids, metric)       # (L, H)
    pattern = patch_heads(model, clean_ids, corrupted_ids, metric, activation="pattern")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from torch import Tensor

from ._patch_runs import Cell, Metric, normalized, patched, shaped
from ._sites import Input, Stack, chosen, find_stack

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
    layers: Subset = None,
    positions: Subset = None,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """The metric of the corrupted run with ``blocks.{l}.hook_{hook}`` at position t taken
    from the clean run, for each layer l and position t: a tensor (L, T); with
    ``per_position=False`` the whole layer's activation at once (all positions): (L,).

    clean, corrupted: inputs of the same shape (ids, a dict of the model's arguments or a
        tuple of them).
    metric: the model's output -> a scalar (a one-element tensor or a float), or one value
        per prompt (B,): the grid then has the prompts first, (B, L, T).
    hook: ``"resid_pre"`` | ``"attn_out"`` | ``"resid_mid"`` | ``"mlp_out"`` |
        ``"resid_post"``, and ``"cross_attn_out"`` | ``"resid_mid_cross"`` in a decoder with
        cross-attention.
    stack: ``"encoder"`` | ``"decoder"`` (None: the decoder when the model has one); T is
        that stack's length.
    layers, positions: the subset of the grid to compute, each an int, a range or a list of
        ints (None: all). The axis keeps its place with one entry per index asked for, in
        that order (an int gives an axis of length 1; indices count from 0, negative ones are
        refused): ``layers=[0, 5], positions=range(3, 8)`` gives (2, 5). ``positions`` needs
        ``per_position=True``. A ValueError names a value out of range.
    normalize: return (m − m_corrupted) / (m_clean − m_corrupted) instead of m.
    progress: a progress bar over the runs: True, False, or None (on a terminal or in a
        notebook).
    """
    where = find_stack(model, stack)
    chosen_layers = chosen(layers, len(where), "layers", "layers")
    positions_need_rows(positions, per_position)
    names = [where.point(layer, hook) for layer in chosen_layers]
    cells = residual_cells(names, per_position, positions)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {hook}",
    )  # fmt: skip
    grid = residual_grid(shapes[names[0]], per_position, positions)
    return shaped(values, len(names), *grid)


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
    layers: Subset = None,
    heads: Subset = None,
    positions: Subset = None,
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
    layers, heads, positions: the subset to compute (ints, ranges, lists; None: all); each
        axis has one entry per index asked for, in that order. ``heads`` counts the
        key/value heads for k and v; ``positions`` (the query positions of a pattern) needs
        ``per_position=True``.
    The other arguments are those of ``patch_residual``; a metric of one value per prompt
    puts the prompts first: (B, L, H, ...).

    TransformerLens's ``get_act_patch_attn_head_{out,q,k,v,pattern}_all_pos`` give the
    (L, H) grids; its ``..._by_pos`` functions give (L, T, H) for z, q, k, v, the transpose
    of this one's (L, H, T), and (L, H, T) for the pattern; its
    ``get_act_patch_attn_head_pattern_dest_src_pos`` is ``per_source=True``.
    """
    where = find_stack(model, stack)
    where.check_kind(kind)
    chosen_layers = chosen(layers, len(where), "layers", "layers")
    names = head_names(where, kind, activation, chosen_layers)
    if per_source and not (activation == "pattern" and per_position):
        raise ValueError(
            "per_source=True patches one attention weight A_ts at a time: it needs "
            f"activation='pattern' and per_position=True; got activation={activation!r}, "
            f"per_position={per_position}"
        )
    positions_need_rows(positions, per_position)
    n_head = head_count(where, chosen_layers[0], kind, activation)
    chosen_heads = chosen(heads, n_head, "heads", f"{activation} heads")
    cells = head_cells(names, activation, per_position, per_source, chosen_heads, positions)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {activation} per head",
    )  # fmt: skip
    grid = head_grid(shapes[names[0]], activation, per_position, per_source, positions)
    return shaped(values, len(names), len(chosen_heads), *grid)


Subset = int | range | Sequence[int] | None  # layers=, heads=, positions= of a grid


def positions_need_rows(positions: Subset, per_position: bool) -> None:
    if positions is not None and not per_position:
        raise ValueError(
            f"positions={positions!r} picks the positions patched one at a time: it needs "
            "per_position=True (per_position=False patches every position at once)"
        )


def residual_cells(
    names: Sequence[str], per_position: bool, positions: Subset = None
) -> Callable[..., Iterator[Cell]]:
    """The cells of a (B, T, C) point per layer: each position asked for, or the whole
    tensor."""

    def cells(shapes: dict[str, tuple]) -> Iterator[Cell]:
        for name in names:
            if per_position:
                at = chosen(positions, shapes[name][1], "positions", "positions")
                yield from ((name, (slice(None), p)) for p in at)
            else:
                yield name, (slice(None),)

    return cells


def residual_grid(shape: tuple, per_position: bool, positions: Subset = None) -> tuple[int, ...]:
    if not per_position:
        return ()
    return (len(chosen(positions, shape[1], "positions", "positions")),)


def head_cells(
    names: Sequence[str],
    what: str,
    per_position: bool,
    per_source: bool,
    heads: Sequence[int] | None = None,
    positions: Subset = None,
) -> Callable[..., Iterator[Cell]]:
    """The cells of a head point per layer, in the order of ``head_grid``: q, k, v, z are
    (B, T, H, D), the pattern (B, H, T, S). ``heads``: those asked for (None: all); a head
    past the point's own count (a key/value head of grouped-query attention) is left out."""
    every = slice(None)

    def cells(shapes: dict[str, tuple]) -> Iterator[Cell]:
        for name in names:
            shape = shapes[name]
            n_head, n_pos = (shape[1], shape[2]) if what == "pattern" else (shape[2], shape[1])
            at = chosen(positions, n_pos, "positions", "positions") if per_position else []
            for h in [h for h in (range(n_head) if heads is None else heads) if h < n_head]:
                if what == "pattern":
                    if not per_position:
                        yield name, (every, h)
                    elif not per_source:
                        yield from ((name, (every, h, t)) for t in at)
                    else:
                        for t in at:
                            yield from ((name, (every, h, t, s)) for s in range(shape[3]))
                elif per_position:
                    yield from ((name, (every, t, h)) for t in at)
                else:
                    yield name, (every, every, h)

    return cells


def head_grid(
    shape: tuple, what: str, per_position: bool, per_source: bool, positions: Subset = None
) -> tuple[int, ...]:
    """The shape of one head's grid: (), (T,) or (T, S) (T: the positions asked for)."""
    if not per_position:
        return ()
    n_pos = shape[2] if what == "pattern" else shape[1]
    n = len(chosen(positions, n_pos, "positions", "positions"))
    return (n, shape[3]) if per_source else (n,)


def head_count(where: Stack, layer: int, kind: str, what: str) -> int:
    """The heads of ``what`` in ``layer``: key/value heads for k and v, else query heads."""
    block = where.blocks[layer]
    attn = block.attn if kind == "self" else block.cross_attn
    return attn.n_kv_head if what in ("k", "v") else attn.n_head


def head_names(where: Stack, kind: str, what: str, layers: Sequence[int] | None = None) -> list:
    """``hook_{what}`` of the ``kind`` attention of each of ``layers`` (None: all)."""
    layers = range(len(where)) if layers is None else layers
    return [where.head_point(layer, kind, what) for layer in layers]
