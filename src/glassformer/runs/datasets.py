"""Loading a run's data and making its tokenizer, as the plan says.

Over-long examples: the command line reads seq2seq and classification data with
``overflow="truncate"`` unless ``--set data.overflow=error|drop`` says otherwise, so real data
(a message longer than the model's ``max_len``) trains with the defaults, and the header says how
many examples were cut. For classification this is what Hugging Face tokenizers do with
``truncation=True``: the first ``max_len`` tokens of a text nearly always carry its label. For
seq2seq the same default is chosen, and Hugging Face's translation and summarization scripts
truncate both sides too: a model cannot read a source or write a target longer than its
``max_len`` anyway, so a truncated pair teaches what the model can do (the start of the target,
then stop), while dropping long pairs would silently leave out the long examples, or all of them
when ``max_len`` is too small. The count in the header tells when ``max_len`` should grow.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..data import TextDataset, load_dataset
from ..data.synthetic import DEFAULT_SIZES
from ..data.tokenizer_cache import trained_tokenizer
from ..tasks import TASKS
from ..tokenizers import Tokenizer
from .evaldata import short_list
from .plan import RunPlan, is_builtin

__all__ = [
    "DEFAULT_OVERFLOW",
    "align_labels",
    "load_split",
    "load_splits",
    "train_tokenizer",
    "validation_options",
]

DEFAULT_OVERFLOW = "truncate"  # seq2seq and classification at the command line (see above)


def load_split(name: str, split: str, task: str, options: dict[str, Any]) -> TextDataset:
    """One split of a built-in dataset or a user file, parsed for ``task`` (lm, mlm, ...);
    over-long seq2seq and classification examples are truncated unless ``options["overflow"]``
    says otherwise (the module docstring)."""
    kind = TASKS[task].data
    if kind != "lm":
        options = {"overflow": DEFAULT_OVERFLOW, **options}
    return load_dataset(name, split, task=kind, **options)


def load_splits(plan: RunPlan) -> tuple[TextDataset, TextDataset | None]:
    """(train, validation or None). The [data] options go to the training data, and to the
    validation data when it is of the same kind (the same built-in dataset, or a file; a part
    held out of the training file is read with the same options, val_fraction included).
    Training a classifier needs at least two labels (evaluating one does not)."""
    train = load_split(plan.data, "train", plan.task, plan.data_options)
    if plan.task == "classify" and len(train.labels) < 2:
        line = f", line {train.lines[0]}" if train.lines else ""
        raise ValueError(
            f"file {train.name!r}{line}: every example has the label {train.labels[0]!r}: "
            "allowed at least 2 distinct labels to train a classifier"
        )
    if plan.validation is None:
        return train, None
    options = validation_options(plan)
    validation = load_split(plan.validation, "validation", plan.task, options)
    if train.labels:
        validation = align_labels(validation, train.labels)
    return train, validation


def validation_options(plan: RunPlan) -> dict[str, Any]:
    """The options of the plan's validation data: the [data] options when it is of the same
    kind as the training data (the same built-in dataset, or a file), else none. A built-in
    task's ``num_examples`` sizes its training part; its validation part holds as many
    examples, at most ``DEFAULT_SIZES["validation"]`` (2,000): enough to measure, few enough
    for ``glassformer eval`` to decode in seconds."""
    if plan.validation is None or is_builtin(plan.validation) != is_builtin(plan.data):
        return {}
    options = dict(plan.data_options)
    if is_builtin(plan.validation) and "num_examples" in options:
        n = options["num_examples"]
        if isinstance(n, int) and not isinstance(n, bool):  # else the dataset refuses it
            options["num_examples"] = min(n, DEFAULT_SIZES["validation"])
    return options


def align_labels(dataset: TextDataset, labels: tuple[str, ...]) -> TextDataset:
    """``dataset`` with the class list ``labels`` (the model's), so that class indices agree;
    a label the model does not know is refused."""
    if dataset.labels == tuple(labels):
        return dataset
    unknown = sorted(set(dataset.labels) - set(labels))
    if unknown:
        raise ValueError(
            f"{dataset.name}: labels {short_list(unknown)} are not among the model's "
            f"{len(labels)} classes {short_list(labels, keep=5)}"
        )
    return dataclasses.replace(dataset, labels=tuple(labels))


def train_tokenizer(plan: RunPlan, train: TextDataset, progress: str = "none") -> Tokenizer:
    """A tokenizer of the plan's kind, trained on the texts of the training split as they are
    read (a text file's in pieces, never whole: the tokenizer keeps only its counts), counted
    on several cores, or read from the cache where a run trained it on the same data with the
    same options (data/tokenizer_cache.py); ``progress`` ("bar", "lines", "none") shows it."""
    return trained_tokenizer(train, plan.tokenizer, plan.tokenizer_options, progress=progress)
