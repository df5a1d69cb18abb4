"""``GLASSFORMER_TEST_SCALE=F``: a test aid that shrinks ``glassformer train`` and ``eval``.

The test suite walks the README and the tutorials command by command, the training commands
included (tests/docs/test_walk.py). With the variable set to a factor F (0 < F <= 1) a run
does F times its work: each count below is multiplied by F and rounded up (a count of 0, which
means "none" or "only at the end", stays 0):

    train       steps, warmup, eval_every, save_every, log_every, eval_batches, eval_generate
    data        num_examples of a generated task (its default size when unset), to an even
                number as is_sorted needs
    sample      max_new_tokens

and ``glassformer eval`` reads F times the batches it would. A ``--steps N`` given with
``--resume`` is scaled as well, so that a run extended from 1000 to 2000 steps goes from 2 to 4
at F = 0.002. The scaled values are what the run does and what its run.json records; the
settings it was given are kept as they were. The model is left as the settings make it (the
documented code reads its layers and heads). Each command that scales says so on stderr.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from typing import Any

from ..data.registry import dataset_options
from ..data.synthetic import DEFAULT_SIZES
from ..training import TrainConfig
from .errors import RunError
from .settings import SampleSettings

__all__ = [
    "VARIABLE",
    "note_scale",
    "scale_from_env",
    "scaled",
    "scaled_batches",
    "scaled_run",
    "scaled_steps",
]

VARIABLE = "GLASSFORMER_TEST_SCALE"
TRAIN_COUNTS = (
    "steps", "warmup", "eval_every", "save_every", "log_every", "eval_batches", "eval_generate",
)  # fmt: skip


def scale_from_env() -> float | None:
    """F from the environment; None when the variable is unset or empty."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return None
    try:
        factor = float(text)
    except ValueError:
        factor = math.nan
    if not 0 < factor <= 1:
        raise RunError(f"{VARIABLE}={text}: allowed a number F with 0 < F <= 1, e.g. 0.002")
    return factor


def scaled(count: int, factor: float) -> int:
    """``count`` times ``factor``, rounded up; 0 stays 0, anything else is at least 1."""
    if count == 0:
        return 0
    return max(1, math.ceil(round(count * factor, 9)))


def note_scale() -> None:
    """One note line on stderr when the variable is set: the run is not the one asked for."""
    factor = scale_from_env()
    if factor is not None:
        print(
            f"glassformer: note: {VARIABLE}={factor:g} (a test aid): steps, evaluations, "
            "generated examples, the sample and eval's batches scaled down",
            file=sys.stderr,
            flush=True,
        )


def scaled_batches(batches: int) -> int:
    """The batches ``eval`` reads, scaled when the variable is set."""
    factor = scale_from_env()
    return batches if factor is None else scaled(batches, factor)


def scaled_steps(steps: int | None) -> int | None:
    """A --steps given with --resume, scaled when the variable is set."""
    factor = scale_from_env()
    return steps if steps is None or factor is None else scaled(steps, factor)


def scaled_run(
    data: str, data_options: dict[str, Any], train: TrainConfig, sample: SampleSettings
) -> tuple[dict[str, Any], TrainConfig, SampleSettings]:
    """The run's data options, training and sample settings, scaled when the variable is set
    (see the module docstring); unchanged otherwise."""
    factor = scale_from_env()
    if factor is None:
        return data_options, train, sample
    train = train.replace(**{k: scaled(getattr(train, k), factor) for k in TRAIN_COUNTS})
    sample = dataclasses.replace(sample, max_new_tokens=scaled(sample.max_new_tokens, factor))
    takes = {p.name for p in dataset_options().get(data, [])}
    if "num_examples" in takes:
        n = scaled(data_options.get("num_examples") or DEFAULT_SIZES["train"], factor)
        data_options = {**data_options, "num_examples": n + n % 2}
    return data_options, train, sample
