"""Rows of an earlier run of the data benchmark carried into a new one (bench_data.py
``--keep FILE``), so that a run can measure only some peers or sizes again.

The earlier results must have been measured with the same model, tokenizer.json vocabulary
and BPE vocabulary (``SAME``). Every earlier row whose (size, peer) the new run does not
measure is carried over as it was, marked ``"carried": {"date", "cpu"}`` from the earlier
run's environment (a row carried before keeps its first mark). A size is matched by its
bytes, so ``1000MB`` replaces ``1GB``. The sizes of the results become those of both runs,
ordered by bytes, and the rows are ordered by size, then by the peers' order (LABELS).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.data_peers import LABELS

SAME = ("model", "hf_vocab", "bpe_vocab")  # settings an earlier run must share


def earlier_results(path: str | Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The results in ``path``; ValueError naming the file and what is wrong with it: not
    readable, not the data benchmark's JSON, or one of ``SAME`` differing from ``settings``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not (isinstance(data, dict) and data.get("benchmark") == "data"
            and isinstance(data.get("rows"), list)):  # fmt: skip
        raise ValueError(f'{path}: not results of the data benchmark ("benchmark": "data", rows)')
    old = data.get("settings") or {}
    for key in SAME:
        if old.get(key) != settings[key]:
            raise ValueError(
                f"{path}: its {key} is {old.get(key)!r}, this run's {settings[key]!r}: rows are "
                f"carried only from a run with the same {key}"
            )
    return data


def carry(
    rows: list[dict[str, Any]], sizes: list[tuple[str, int]], earlier: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """This run's ``rows`` with the ``earlier`` results' rows of the cases it did not measure,
    and the sizes of both (this run's ``sizes``: (label, bytes), e.g. ("1GB", 10**9)); returns
    (rows, size labels), each in order (the module docstring)."""
    env = earlier.get("environment") or {}
    mark = {"date": env.get("date"), "cpu": env.get("cpu")}
    measured = {(r["bytes"], r["peer"]) for r in rows}
    kept = [
        r | {"carried": r.get("carried") or mark}
        for r in earlier["rows"]
        if (r["bytes"], r["peer"]) not in measured
    ]
    order = {p: i for i, p in enumerate(LABELS)}
    merged = sorted(rows + kept, key=lambda r: (r["bytes"], order.get(r["peer"], len(order))))
    labels = {r["bytes"]: r["size"] for r in kept} | {n: label for label, n in sizes}
    return merged, [labels[n] for n in sorted(labels)]
