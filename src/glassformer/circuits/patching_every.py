"""Several patching grids in one call, from one clean and one corrupted run and with one
progress bar: every block's stream and sub-layer outputs (TransformerLens's
``get_act_patch_block_every``), every head's z, q, k, v and pattern (its
``get_act_patch_attn_head_all_pos_every`` and ``..._by_pos_every``). Each grid is the one
patching.py's ``patch_residual`` or ``patch_heads`` gives, stacked on a first axis in the order
asked for (after the prompts' axis, for a metric of one value per prompt).

    blocks = patch_blocks(model, clean_ids, corrupted_ids, metric)        # (3, L, T)
    heads = patch_heads_every(model, clean_ids, corrupted_ids, metric)    # (5, L, H)
    some = patch_blocks(model, clean_ids, corrupted_ids, metric, layers=range(4), positions=-1)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from ._patch_runs import Metric, patched, shaped
from ._sites import Input, chosen, find_stack
from .patching import (
    Subset,
    head_cells,
    head_grid,
    head_names,
    positions_need_rows,
    residual_cells,
    residual_grid,
)

__all__ = ["patch_blocks", "patch_heads_every"]


def patch_blocks(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    *,
    hooks: Sequence[str] = ("resid_pre", "attn_out", "mlp_out"),
    stack: str | None = None,
    per_position: bool = True,
    layers: Subset = None,
    positions: Subset = None,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_residual`` at each of ``hooks`` (by default the stream entering each block and
    what its attention and its MLP write), stacked: (len(hooks), L, T); with
    ``per_position=False`` each layer's whole activation: (len(hooks), L). The clean and
    corrupted runs are made once for all of them. ``layers``, ``positions``: a subset, as in
    ``patch_residual``; a metric of one value per prompt puts the prompts first:
    (B, len(hooks), L, T). The other arguments are ``patch_residual``'s."""
    where = find_stack(model, stack)
    hooks = _names_list(hooks, "hooks")
    chosen_layers = chosen(layers, len(where), "layers", "layers")
    positions_need_rows(positions, per_position)
    grids = [[where.point(layer, hook, "hooks") for layer in chosen_layers] for hook in hooks]
    names = [name for grid in grids for name in grid]
    cells = residual_cells(names, per_position, positions)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {', '.join(hooks)}",
    )  # fmt: skip
    grid = residual_grid(shapes[names[0]], per_position, positions)
    return shaped(values, len(hooks), len(chosen_layers), *grid)


def patch_heads_every(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    *,
    activations: Sequence[str] = ("z", "q", "k", "v", "pattern"),
    kind: str = "self",
    stack: str | None = None,
    per_position: bool = False,
    layers: Subset = None,
    heads: Subset = None,
    positions: Subset = None,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_heads`` for each of ``activations``, stacked: (len(activations), L, H); with
    ``per_position=True`` (…, L, H, T) (the pattern: each query position's row). With
    grouped-query attention k and v have H_kv < H heads: their rows past H_kv are NaN (no
    such head; TransformerLens's ``..._every`` functions put 0 there). The clean and
    corrupted runs are made once for all of them. ``layers``, ``heads`` (query heads),
    ``positions``: a subset, as in ``patch_heads``; a metric of one value per prompt puts the
    prompts first. The other arguments are ``patch_heads``'s."""
    where = find_stack(model, stack)
    where.check_kind(kind)
    activations = _names_list(activations, "activations")
    if kind == "cross" and per_position and {"k", "v"} & set(activations):
        raise ValueError(
            "kind='cross' with per_position=True: the cross-attention's k and v have the "
            "source's positions, not the queries', so they do not stack with the others; "
            "patch them with patch_heads(..., activation='k', kind='cross', per_position=True)"
        )
    positions_need_rows(positions, per_position)
    chosen_layers = chosen(layers, len(where), "layers", "layers")
    picked = chosen(heads, where.n_head(chosen_layers[0], kind), "heads", "heads")
    groups = [head_names(where, kind, what, chosen_layers) for what in activations]
    names = [name for group in groups for name in group]

    def cells(shapes: dict[str, tuple]) -> Iterator:
        for what, group in zip(activations, groups, strict=True):
            yield from head_cells(group, what, per_position, False, picked, positions)(shapes)

    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {', '.join(activations)} per head",
    )  # fmt: skip
    prompts = (values.shape[1],) if values.dim() == 2 else ()
    n_layer = len(chosen_layers)
    rows = head_grid(shapes[groups[0][0]], activations[0], per_position, False, positions)
    out = torch.full((*prompts, len(activations), n_layer, len(picked), *rows), float("nan"),
                     dtype=values.dtype)  # fmt: skip
    start = 0
    for i, (what, group) in enumerate(zip(activations, groups, strict=True)):
        shape = shapes[group[0]]
        n_head = shape[1] if what == "pattern" else shape[2]
        there = [j for j, h in enumerate(picked) if h < n_head]  # the heads this point has
        size = n_layer * len(there) * (rows[0] if per_position else 1)
        part = shaped(values[start : start + size], n_layer, len(there), *rows)
        out.select(len(prompts), i).index_copy_(len(prompts) + 1, torch.tensor(there), part)
        start += size
    return out


def _names_list(names: Sequence[str], arg: str) -> list[str]:
    if isinstance(names, str) or not names:
        raise ValueError(f"{arg} must be a non-empty list of names; got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{arg} names a point twice: {list(names)}")
    return list(names)
