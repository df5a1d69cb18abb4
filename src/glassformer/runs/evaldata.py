"""Is a data file of the checkpoint's task? The checks ``glassformer eval`` runs on ``--data``.

A file parses for more than one task (a ``.csv`` of ``label,text`` rows is also a file of
``source,target`` pairs, and any file is plain text), so the format alone cannot tell. A file
is refused for a checkpoint when

* its first line is the header of another task's columns, in either order: ``label,text``
  (classification), ``source,target`` (seq2seq), with a comma or a tab; a plain text file
  (lm, mlm) takes neither;
* for a seq2seq model, its pairs look like labelled texts: at least 20 pairs whose sources
  are at most 20 distinct one-word values (each used 4 times or more on average) while the
  targets are mostly (half or more) distinct;
* most of its tokens (more than half, counted on its first 100,000 characters) are ``<UNK>``
  for the checkpoint's tokenizer: the model has never seen its characters or words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..data import TextDataset
from ..data.user_files import COLUMNS
from ..tasks import TASKS
from ..tokenizers import Tokenizer
from .errors import RunError

__all__ = ["check_dataset", "check_header", "short_list"]

# a header row of a kind of examples' columns (data/user_files.py), in either order -> the kind
HEADERS = {names: kind for kind, columns in COLUMNS.items() for names in (columns, columns[::-1])}
MAX_LABELS, MIN_PAIRS, SAMPLE_CHARS = 20, 20, 100_000


def short_list(items: Iterable[object], keep: int = 3, width: int = 20) -> str:
    """``['a', 'b', 'c', ... 298 more]``: the first ``keep`` items (each repr cut to about
    ``width`` characters) and how many more, so that a message stays one short line."""
    items = list(items)
    shown = [_cut(repr(x), width) for x in items[:keep]]
    if len(items) > keep:
        shown.append(f"... {len(items) - keep} more")
    return f"[{', '.join(shown)}]"


def check_header(path: Path, task: str) -> None:
    """Refuse a file whose first line names the columns of another task than ``task``."""
    first = _first_line(path)
    fields = tuple(f.strip().strip('"').lower() for f in re.split("[,\t]", first))
    other, want = HEADERS.get(fields), TASKS[task]
    if other is not None and other != want.data:
        raise RunError(
            f"{path}: its header {first.strip()!r} names {other} columns; the checkpoint "
            f"is a {want.model_noun}: allowed {want.data_format}"
        )


def check_dataset(dataset: TextDataset, task: str, tokenizer: Tokenizer) -> None:
    """Refuse a loaded file that looks like data of another task (module docstring)."""
    if task == "seq2seq":
        check_pairs(dataset)
    check_vocabulary(dataset, tokenizer)


def check_pairs(dataset: TextDataset) -> None:
    """Refuse seq2seq pairs whose sources look like class labels (module docstring)."""
    sources = [source for source, _ in dataset.examples]
    kinds = sorted(set(sources))
    n = len(sources)
    few = len(kinds) <= min(MAX_LABELS, n // 4) and all(len(s.split()) == 1 for s in kinds)
    varied = len({target for _, target in dataset.examples}) * 2 >= n
    if n >= MIN_PAIRS and few and varied:
        raise RunError(
            f"{dataset.name}: its first column holds {len(kinds)} values over {n} rows, "
            f"{short_list(kinds)}, like classification labels; the checkpoint is a seq2seq "
            f"model: allowed {TASKS['seq2seq'].data_format}"
        )


def check_vocabulary(dataset: TextDataset, tokenizer: Tokenizer) -> None:
    """Refuse data whose tokens are mostly ``<UNK>`` for ``tokenizer`` (module docstring)."""
    unk = tokenizer.unk_id  # a Hugging Face tokenizer's own unknown token ("[UNK]", ...)
    unknown = total = chars = 0
    for text in dataset.texts():
        ids = tokenizer.encode(text[: SAMPLE_CHARS - chars])
        unknown += ids.count(unk)
        total += len(ids)
        chars += len(text)
        if chars >= SAMPLE_CHARS:
            break
    if unknown * 2 > total:
        raise RunError(
            f"{dataset.name}: {unknown} of its first {total} tokens ({unknown / total:.0%}) "
            f"are <UNK> for the checkpoint's tokenizer: allowed data in the model's vocabulary"
        )


def _first_line(path: Path) -> str:
    """The first non-blank line among the first 4 KiB of ``path`` ('' if none or unreadable);
    reading the whole file, and its errors, is the loader's job."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return ""
    lines = head.decode("utf-8-sig", errors="replace").splitlines()
    return next((line for line in lines if line.strip()), "")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
