"""Loading a run's data and making its tokenizer, as the plan says."""

from __future__ import annotations

from typing import Any

from ..data import TextDataset, load_dataset
from ..tokenizers import Tokenizer, get_tokenizer
from .evaldata import short_list
from .plan import DATA_TASK, RunPlan, is_builtin

__all__ = ["align_labels", "load_split", "load_splits", "train_tokenizer"]


def load_split(name: str, split: str, task: str, options: dict[str, Any]) -> TextDataset:
    """One split of a built-in dataset or a user file, parsed for ``task`` (lm, mlm, ...)."""
    return load_dataset(name, split, task=DATA_TASK[task], **options)


def load_splits(plan: RunPlan) -> tuple[TextDataset, TextDataset | None]:
    """(train, validation or None). The [data] options go to the training data, and to the
    validation data when it is of the same kind (the same built-in dataset, or a file)."""
    train = load_split(plan.data, "train", plan.task, plan.data_options)
    if plan.validation is None:
        return train, None
    same_kind = is_builtin(plan.validation) == is_builtin(plan.data)
    options = plan.data_options if same_kind else {}
    validation = load_split(plan.validation, "validation", plan.task, options)
    if train.labels:
        validation = align_labels(validation, train.labels)
    return train, validation


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
    return TextDataset(
        dataset.name,
        dataset.task,
        dataset.split,
        dataset.examples,
        labels=tuple(labels),
        description=dataset.description,
    )


def train_tokenizer(plan: RunPlan, train: TextDataset) -> Tokenizer:
    """A tokenizer of the plan's kind, trained on the texts of the training split."""
    tokenizer = get_tokenizer(plan.tokenizer)
    return tokenizer.train(list(train.texts()), **plan.tokenizer_options)
