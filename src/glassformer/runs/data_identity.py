"""What a run was trained on, recorded in run.json, so that ``--resume`` on other data is
caught instead of continuing silently (a changed file's new characters would become <UNK>,
and its validation loss would no longer compare with the run's).

Each part, training and validation, is recorded by its size and SHA-256:

    a file              {"file": "/abs/train.txt", "bytes": 1440, "sha256": "..."}
                        the bytes of the file (a part held out of the training file is
                        that file again)
    a folder            {"file": "/abs/texts", "bytes": 91234, "sha256": "...", "files": 12}
                        the SHA-256 of its files' paths, sizes and SHA-256s (the .txt files
                        of a folder of texts, every file of a datasets folder)
    a built-in dataset  {"dataset": "reverse", "split": "train", "bytes": 812345,
                        "sha256": "..."}: its examples as UTF-8 JSON, which catches a change
                        of the dataset's generator or corpus between versions

``--resume`` recomputes both and refuses a difference in one line naming the file (or the
dataset) and the ways on: another ``--out`` for a new run, or ``--data-changed-ok`` to
continue on the changed data (whose identity is then recorded). A run.json from before this
record resumes unchecked, with a note, and gets the record.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from ..data import TextDataset
from ..data.formats import data_digest
from ..named import naming
from .errors import RunError, RunNote
from .plan import RunPlan, is_builtin

__all__ = ["check_same_data", "data_identity"]

PARTS = {"training": "train", "validation": "validation"}


def data_identity(
    plan: RunPlan, train: TextDataset, validation: TextDataset | None
) -> dict[str, Any]:
    """The identity of each part of the plan's data: ``{"training": {...}, "validation":
    {...} or None}`` (see the module docstring)."""
    loaded = {"training": (plan.data, train), "validation": (plan.validation, validation)}
    found: dict[str, Any] = {}
    for part, (source, dataset) in loaded.items():
        if source is None or dataset is None:
            found[part] = None
        elif is_builtin(source):
            data = json.dumps(list(dataset.examples), ensure_ascii=False).encode("utf-8")
            found[part] = {
                "dataset": source,
                "split": PARTS[part],
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        else:  # a text file's digest is its scan's (data/text_scan.py): not hashed again
            digest = getattr(dataset.part, "digest", None) or data_digest(Path(source))
            found[part] = {"file": source, **digest}
    return found


def check_same_data(plan: RunPlan, now: dict[str, Any], accept: bool) -> None:
    """Compare ``now`` with the identity recorded in the resumed ``plan``: a ``RunError``
    on a difference unless ``accept`` (then a note); a note when nothing was recorded."""
    then = plan.data_identity
    if then is None:
        _note(
            f"{plan.out / 'run.json'} records no size and hash of the run's data (it was "
            "written by an older glassformer): resuming without checking that the data are "
            "unchanged; they are recorded now"
        )
        return
    noted = []  # a part held out of the training file is that file again: noted once
    for part in PARTS:
        before, after = then.get(part), now.get(part)
        if before == after or (before, after) in noted:
            continue
        noted.append((before, after))
        what = _describe(part, before, after)
        if accept:
            _note(f"{what}; continuing on the changed data (data_changed_ok=True)")
            continue
        raise RunError(
            f"{what}; to train on it, start a new run with another run.out, or continue "
            f"{plan.out} on the changed data with Run.resume and data_changed_ok=True",
            names=["run.out", "Run.resume", "data_changed_ok"],
        )


def _describe(part: str, before: Any, after: Any) -> str:
    """``the training file /data/train.txt changed since the run last read it (1,440 bytes,
    sha256 3f2a... then; 1,512 bytes, sha256 9b01... now)``."""
    shown = after or before or {}
    if "file" in shown:
        kind = "folder" if "files" in shown else "file"
        source = f"the {part} {kind} {shown['file']}"
    else:
        source = f"the {part} data of the built-in dataset {shown.get('dataset')}"
    return (
        f"{source} changed since the run last read it ({_size(before)} then; "
        f"{_size(after)} now)"
    )


def _size(identity: Any) -> str:
    if not isinstance(identity, dict):
        return "none"
    size, digest = identity.get("bytes"), str(identity.get("sha256"))
    shown = f"{size:,}" if isinstance(size, int) else repr(size)
    return f"{shown} bytes, sha256 {digest[:12]}..."


def _note(message: str) -> None:
    warnings.warn(naming(RunNote(message), names=["data_changed_ok"]), stacklevel=3)
