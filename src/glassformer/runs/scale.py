"""``scale=F``: a test aid that shrinks a run (the command line's ``GLASSFORMER_TEST_SCALE``).

The test suite walks the README and the tutorials command by command, the training commands
included (tests/docs/test_walk.py). Given a factor F (0 < F <= 1) a run does F times its work:
each count below is multiplied by F and rounded up (a count of 0, which means "none" or "only
at the end", stays 0):

    train       steps, warmup, eval_every, save_every, log_every, eval_batches, eval_generate
    data        num_examples of a generated task (its default size when unset), to an even
                number as is_sorted needs
    sample      max_new_tokens

and an evaluation reads F times the batches it would. A ``steps`` given on resuming is scaled
as well, so that a run extended from 1000 to 2000 steps goes from 2 to 4 at F = 0.002. The
scaled values are what the run does and what its run.json records; the settings it was given
are kept as they were. The model is left as the settings make it (the documented code reads
its layers and heads). The factor comes from the caller (``make_plan(..., scale=F)``,
``Run.from_settings``, ``Run.resume_with``, ``evaluate_model``); nothing here reads the
environment.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..data.registry import dataset_options
from ..data.synthetic import DEFAULT_SIZES
from ..training import TrainConfig
from .errors import RunError
from .settings import SampleSettings

__all__ = ["check_scale", "scaled", "scaled_run"]

TRAIN_COUNTS = (
    "steps", "warmup", "eval_every", "save_every", "log_every", "eval_batches", "eval_generate",
)  # fmt: skip


def check_scale(factor: Any) -> float:
    """``factor`` as a float, refused unless 0 < F <= 1."""
    try:
        value = float(factor)
    except (TypeError, ValueError):
        value = math.nan
    if not 0 < value <= 1:
        raise RunError(f"scale={factor}: allowed a number F with 0 < F <= 1, e.g. 0.002")
    return value


def scaled(count: int, factor: float) -> int:
    """``count`` times ``factor``, rounded up; 0 stays 0, anything else is at least 1."""
    if count == 0:
        return 0
    return max(1, math.ceil(round(count * factor, 9)))


def scaled_run(
    data: str,
    data_options: dict[str, Any],
    train: TrainConfig,
    sample: SampleSettings,
    factor: float,
) -> tuple[dict[str, Any], TrainConfig, SampleSettings]:
    """The run's data options, training and sample settings scaled by ``factor`` (see the
    module docstring)."""
    train = train.replace(**{k: scaled(getattr(train, k), factor) for k in TRAIN_COUNTS})
    sample = dataclasses.replace(sample, max_new_tokens=scaled(sample.max_new_tokens, factor))
    takes = {p.name for p in dataset_options().get(data, [])}
    if "num_examples" in takes:
        n = scaled(data_options.get("num_examples") or DEFAULT_SIZES["train"], factor)
        data_options = {**data_options, "num_examples": n + n % 2}
    return data_options, train, sample
