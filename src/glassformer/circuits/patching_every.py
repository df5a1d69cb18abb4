"""Several patching grids in one call, from one clean run and with one progress bar: every
block's stream and sub-layer outputs (TransformerLens's ``get_act_patch_block_every``), every
head's z, q, k, v and pattern (its ``get_act_patch_attn_head_all_pos_every`` and
``..._by_pos_every``). Each grid is the one patching.py's ``patch_residual`` or
``patch_heads`` gives, stacked on a first axis in the order asked for.

    blocks = patch_blocks(model, clean_ids, corrupted_ids, metric)        # (3, L, T)
    heads = patch_heads_every(model, clean_ids, corrupted_ids, metric)    # (5, L, H)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from ._patch_runs import Metric, patched
from ._sites import Input, find_stack
from .patching import head_cells, head_grid, head_names, residual_cells, residual_grid

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
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_residual`` at each of ``hooks`` (by default the stream entering each block and
    what its attention and its MLP write), stacked: (len(hooks), L, T); with
    ``per_position=False`` each layer's whole activation: (len(hooks), L). The clean run is
    made once for all of them. The other arguments are ``patch_residual``'s."""
    where = find_stack(model, stack)
    hooks = _names_list(hooks, "hooks")
    grids = [[where.point(layer, hook, "hooks") for layer in range(len(where))] for hook in hooks]
    names = [name for grid in grids for name in grid]
    cells = residual_cells(names, per_position)
    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {', '.join(hooks)}",
    )  # fmt: skip
    return values.reshape(len(hooks), len(where), *residual_grid(shapes[names[0]], per_position))


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
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_heads`` for each of ``activations``, stacked: (len(activations), L, H); with
    ``per_position=True`` (…, L, H, T) (the pattern: each query position's row). With
    grouped-query attention k and v have H_kv < H heads: their rows past H_kv are NaN (no
    such head; TransformerLens's ``..._every`` functions put 0 there). The clean run is made
    once for all of them. The other arguments are ``patch_heads``'s."""
    where = find_stack(model, stack)
    where.check_kind(kind)
    activations = _names_list(activations, "activations")
    if kind == "cross" and per_position and {"k", "v"} & set(activations):
        raise ValueError(
            "kind='cross' with per_position=True: the cross-attention's k and v have the "
            "source's positions, not the queries', so they do not stack with the others; "
            "patch them with patch_heads(..., activation='k', kind='cross', per_position=True)"
        )
    groups = [head_names(where, kind, what) for what in activations]
    names = [name for group in groups for name in group]

    def cells(shapes: dict[str, tuple]) -> Iterator:
        for what, group in zip(activations, groups, strict=True):
            yield from head_cells(group, what, per_position, False)(shapes)

    values, shapes = patched(
        model, clean, corrupted, metric, names, cells,
        normalize=normalize, progress=progress, what=f"patching {', '.join(activations)} per head",
    )  # fmt: skip
    n_layer, n_head = len(where), where.n_head(0, kind)
    out = torch.full((len(activations), n_layer, n_head, *_positions(shapes, groups, per_position)),
                     float("nan"), dtype=values.dtype)  # fmt: skip
    start = 0
    for i, (what, group) in enumerate(zip(activations, groups, strict=True)):
        grid = head_grid(shapes[group[0]], what, per_position, False)
        size = n_layer * grid[0] * (grid[1] if per_position else 1)
        out[i, :, : grid[0]] = values[start : start + size].reshape(n_layer, *grid)
        start += size
    return out


def _positions(shapes: dict[str, tuple], groups: list[list[str]], per_position: bool) -> tuple:
    """(T,) of the query positions per head when ``per_position``, else ()."""
    if not per_position:
        return ()
    name = groups[0][0]
    return (shapes[name][2] if name.endswith("hook_pattern") else shapes[name][1],)


def _names_list(names: Sequence[str], arg: str) -> list[str]:
    if isinstance(names, str) or not names:
        raise ValueError(f"{arg} must be a non-empty list of names; got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{arg} names a point twice: {list(names)}")
    return list(names)
