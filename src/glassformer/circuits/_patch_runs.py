"""The runs behind every patching grid (patching.py, patching_every.py, path_patching.py): the
clean and corrupted runs cached once, then the corrupted run resumed per cell with that cell's
hooks from the cell's layer and position (_resume.py), without gradients, in eval mode, each
run counted on a progress bar. A metric gives one number, or one per prompt (B,); the grid's
values are then (cells, B), and ``shaped`` puts the prompts first.

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
from ._resume import Resumed, cell_start, evaluate
from ._sites import Input, call, input_shapes

__all__ = ["Metric", "normalized", "patched", "rescaled", "run_each", "shaped", "values_of"]

Metric = Callable[[Any], Tensor | float]
Cell = tuple[str, tuple]  # (hook name, index into its tensor)
Hooks = Sequence[tuple[str, HookFn]]


def normalized(metric: Metric, clean_value: float | Tensor, corrupted_value: float | Tensor):
    """``metric`` rescaled to 0 at the corrupted run and 1 at the clean one:
    out -> (metric(out) − corrupted_value) / (clean_value − corrupted_value); per prompt when
    the values are (B,)."""
    clean_value, corrupted_value = values_of(clean_value), values_of(corrupted_value)
    span = _span(clean_value, corrupted_value)
    return lambda out: (values_of(metric(out)) - corrupted_value) / span


def _span(clean_value: Tensor, corrupted_value: Tensor) -> Tensor:
    span = clean_value - corrupted_value
    if (span == 0).any():
        same = clean_value[span == 0] if clean_value.dim() else clean_value
        raise ValueError(
            f"normalized: the clean and corrupted values are both {same.tolist()}; the metric "
            "does not tell the two runs apart, so there is nothing to rescale"
        )
    return span


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
    """The metric of the corrupted run with each cell's part of its hook point taken from the
    clean run: (cells,), or (cells, B) for a metric of one value per prompt; and the shape of
    each cached point (``cells`` receives those shapes and lists the cells). Both runs are
    made once and cached; each cell resumes the corrupted run at its layer and position
    (_resume.py)."""
    check_inputs(clean, corrupted)
    with torch.no_grad(), eval_mode(model):
        clean_out, cache = call(model.run_with_cache, clean, names=list(names))
        clean_value = metric(clean_out) if normalize else None
        del clean_out  # the clean run's logits are not needed again
        runs = Resumed(model, corrupted, names)
        shapes = {name: tuple(cache[name].shape) for name in names}
        listed = list(cells(shapes))
        jobs = (_cell_job(runs, cache, name, index) for name, index in listed)
        values = run_each(runs, metric, jobs, len(listed), progress=progress, what=what)
        if normalize:  # the corrupted baseline, through the same (hooked) path
            values = rescaled(values, clean_value, metric(runs.out))
    return values, shapes


def rescaled(values: Tensor, clean_value, corrupted_value) -> Tensor:
    """(values − corrupted) / (clean − corrupted), per prompt along the last axis."""
    clean_value, corrupted_value = values_of(clean_value), values_of(corrupted_value)
    return (values - corrupted_value) / _span(clean_value, corrupted_value)


def _cell_job(runs: Resumed, cache, name: str, index: tuple) -> tuple[int, int, Hooks | None]:
    """(layer, position, hooks) of one cell: its hook writes the clean values at ``index``,
    counted from the first position the resumed run computes; hooks None where the clean
    values equal the corrupted ones (the patch changes nothing: the corrupted run's value)."""
    if torch.equal(cache[name][index], runs.cache[name][index]):
        return 0, 0, None
    layer, position, axis = cell_start(name, index)
    first = runs.first(position)
    target = index if not first else (*index[:axis], position - first, *index[axis + 1 :])
    return layer, first, [(name, _put(cache[name], index, target))]


def run_each(
    runs: Resumed,
    metric: Metric,
    jobs: Iterable[tuple[int, int, Hooks]],
    total: int,
    *,
    progress,
    what: str,
) -> Tensor:
    """The metric of the corrupted run resumed once per job (layer, position, hooks) (in the
    caller's no-grad, eval-mode context): (jobs,) or (jobs, B); a progress bar counts the
    ``total`` jobs. The jobs are made one at a time (a job may hold a tensor of its own); a
    job without hooks is the corrupted run itself."""
    bar = progress_bar(total, what, progress)
    values = []
    try:
        for layer, position, hooks in jobs:
            out = runs.out if hooks is None else runs.run(layer, position, hooks)
            values.append(values_of(evaluate(metric, out), runs.batch))
            bar.update(1)
    finally:
        bar.close()
    return stacked(values)


def stacked(values: list[Tensor]) -> Tensor:
    """The values of the cells, (cells,) or (cells, B); every cell gives the same shape."""
    if not values:
        return torch.empty(0)
    shapes = {tuple(v.shape) for v in values}
    if len(shapes) > 1:
        raise ValueError(f"metric gave values of different shapes across runs: {sorted(shapes)}")
    return torch.stack(values)


def shaped(values: Tensor, *grid: int) -> Tensor:
    """(cells,) -> grid; (cells, B) -> (B, *grid): the prompts first."""
    if values.dim() == 2:
        return values.T.reshape(values.shape[1], *grid)
    return values.reshape(grid)


def progress_bar(total: int, what: str, progress: bool | None):
    """A tqdm bar over ``total`` runs described by ``what``, shown as ``progress`` says."""
    if progress is None:
        progress = sys.stderr.isatty() or _in_a_notebook()
    if not isinstance(progress, bool):
        raise TypeError(
            f"progress must be True, False or None (a bar on a terminal); got {progress!r}"
        )
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=what, unit="run", disable=not progress, dynamic_ncols=True)


def _in_a_notebook() -> bool:
    """Whether this runs in a Jupyter kernel: IPython's shell there is ipykernel's (a program
    that only imports ipykernel, as a notebook runner does, is not in one)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _put(source: Tensor, index: tuple, target: tuple) -> HookFn:
    """Write ``source[index]`` into the hooked tensor at ``target`` (the same place, counted
    from the first position the resumed run computes)."""

    def patch(x: Tensor, hook: HookPoint) -> Tensor:
        x = x.clone()
        x[target] = source[index]
        return x

    return patch


def values_of(value, batch: int | None = None) -> Tensor:
    """A metric's value as a 0-d tensor, or (B,): one value per prompt (``batch``: B, when
    known). A one-element value is one number (with one prompt, the grid has no prompts'
    axis)."""
    value = torch.as_tensor(value).detach()
    if value.numel() == 1:
        return value.reshape(())
    if value.dim() != 1 or (batch is not None and len(value) != batch):
        raise ValueError(
            "metric must return one number (a scalar tensor or a float) or one per prompt "
            f"({batch if batch is not None else 'B'},); got shape {tuple(value.shape)}"
        )
    return value
