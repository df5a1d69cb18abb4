"""``GLASSFORMER_TEST_SCALE=F``: the test aid that shrinks ``glassformer train`` and ``eval``
(what it scales: glassformer/runs/scale.py). The command line reads the variable and hands the
factor to the library; each command that scales says so on stderr.
"""

from __future__ import annotations

import math
import os
import sys

from .errors import UsageError

__all__ = ["VARIABLE", "scale_from_env"]

VARIABLE = "GLASSFORMER_TEST_SCALE"


def scale_from_env() -> float | None:
    """F from the environment (None when the variable is unset or empty), with a note line on
    stderr when set: the run is not the one asked for."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return None
    try:
        factor = float(text)
    except ValueError:
        factor = math.nan
    if not 0 < factor <= 1:
        raise UsageError(f"{VARIABLE}={text}: allowed a number F with 0 < F <= 1, e.g. 0.002")
    print(
        f"glassformer: note: {VARIABLE}={factor:g} (a test aid): steps, evaluations, "
        "generated examples, the sample and eval's batches scaled down",
        file=sys.stderr,
        flush=True,
    )
    return factor
