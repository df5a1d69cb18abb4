"""The runs behind every patching grid (patching.py, patching_every.py, path_patching.py): the
clean run cached once, then one corrupted run per cell with that cell's hooks, without
gradients, in eval mode, each run counted on a progress bar.

``progress``: True shows a tqdm bar on stderr (one step per corrupted run), False shows
nothing, None (the default) shows it when stderr is a terminal or the code runs in a Jupyter
kernel (where tqdm draws a widget), so a script whose output goes to a log stays quiet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..models.base import eval_mode
from ..nn.hooks import HookFn, HookPoint
from ._sites import Input, call, input_shapes

__all__ = ["Metric", "normalized", "patched", "run_each", "scalar"]

Metric = Callable[[Any], Tensor | float]
Cell = tuple[str, tuple]  # (hook name, index into its tensor)
Hooks = Sequence[tuple[str, HookFn]]


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
    return lambda out: (scalar(metric(out)) - corrupted_value) / span


def check_inputs(clean: Input, corrupted: Input) -> None:
    if input_shapes(clean) != input_shapes(corrupted):
        raise ValueError(
            "clean and corrupted must have the same shapes; got clean "
            f"{input_shapes(clean)} and corrupted {input_shapes(corrupted)}"
        )


def patched(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    names: Sequence[str],
    cells: Callable[[dict[str, tuple]], Iterable[Cell]],
    *,
    normalize: bool,
    progress: bool | None,
    what: str,
) -> tuple[Tensor, dict[str, tuple]]:
    """The metric of one corrupted run per cell, each with that cell's part of its hook point
    taken from the clean run (cached once): a flat tensor, and the shape of each cached point
    (``cells`` receives those shapes and lists the cells)."""
    check_inputs(clean, corrupted)
    with torch.no_grad(), eval_mode(model):
        clean_out, cache = call(model.run_with_cache, clean, names=list(names))
        if normalize:  # the corrupted baseline, through the same (hooked) path
            corrupted_out, _ = call(model.run_with_cache, corrupted, names=list(names))
            metric = normalized(metric, scalar(metric(clean_out)), scalar(metric(corrupted_out)))
        shapes = {name: tuple(cache[name].shape) for name in names}
        runs = [[(name, _put(cache[name], index))] for name, index in cells(shapes)]
        values = run_each(model, corrupted, metric, runs, progress=progress, what=what)
    return values, shapes


def run_each(
    model, corrupted: Input, metric: Metric, runs: Sequence[Hooks], *, progress, what: str
) -> Tensor:
    """The metric of the corrupted input run once with each list of hooks (in the caller's
    no-grad, eval-mode context), as a flat tensor; a progress bar counts the runs."""
    bar = progress_bar(len(runs), what, progress)
    values = []
    try:
        for hooks in runs:
            values.append(scalar(metric(call(model.run_with_hooks, corrupted, hooks=hooks))))
            bar.update(1)
    finally:
        bar.close()
    return torch.stack(values) if values else torch.empty(0)


def progress_bar(total: int, what: str, progress: bool | None):
    """A tqdm bar over ``total`` runs described by ``what``, shown as ``progress`` says."""
    if progress is None:
        progress = sys.stderr.isatty() or "ipykernel" in sys.modules
    if not isinstance(progress, bool):
        raise TypeError(
            f"progress must be True, False or None (a bar on a terminal); got {progress!r}"
        )
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=what, unit="run", disable=not progress, dynamic_ncols=True)


def _put(source: Tensor, index: tuple) -> HookFn:
    def patch(x: Tensor, hook: HookPoint) -> Tensor:
        x = x.clone()
        x[index] = source[index]
        return x

    return patch


def scalar(value) -> Tensor:
    value = torch.as_tensor(value)
    if value.numel() != 1:
        raise ValueError(
            f"metric must return one number (a scalar tensor or a float); got shape "
            f"{tuple(value.shape)}"
        )
    return value.detach().reshape(())
