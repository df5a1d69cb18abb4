"""The four tasks, one record each: the model, the data, the loss and metrics, the defaults.

    lm        DTraining (Algorithm 13): a decoder predicts the next token
    mlm       ETraining (Algorithm 12): an encoder predicts the masked tokens
    seq2seq   EDTraining (Algorithm 11): an encoder-decoder predicts the target, teacher-forced
    classify  an encoder with a classification head predicts the class of a text, P(c | x)

(the algorithms of Phuong & Hutter, "Formal Algorithms for Transformers" (2022)).

Everything that depends on the task reads its record here: TrainConfig (the allowed names),
the Trainer (the model family it needs), ``make_loader`` (the kind of examples), evaluation
(the loss and the metrics), ``glassformer train`` and ``glassformer eval`` (the model class,
the default preset, the data a file holds, the words of their messages).

A task's data is one of the three kinds of examples of the notes (``TextDataset.task``):
"lm" texts (read by lm and mlm), "seq2seq" pairs and "classification" labelled texts. The data
API (``make_loader``) also takes a task's ``aliases``: "classification" for classify.

This module imports nothing of glassformer: models are named by their class name, the key of
``glassformer.models.ARCHITECTURES``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DATA_KINDS",
    "TASKS",
    "TASK_NAMES",
    "Task",
    "check_data_kind",
    "get_task",
    "task_for_data",
    "task_for_model",
]


@dataclass(frozen=True)
class Task:
    """What one task is made of."""

    name: str  # --task, TrainConfig.task, run.json and eval.json
    family: str  # ModelConfig.family of its model
    model_class: str  # its model: a class of glassformer.models, by name
    data: str  # the kind of examples it reads (TextDataset.task)
    preset: str  # glassformer train's default --model
    loss: str  # what the cross-entropy scores: "next token", "masked tokens", "target", "class"
    metrics: tuple[str, ...]  # the validation metrics, loss first (training/evaluate.py)
    help: str  # its words in the help of --task
    model_noun: str  # its model in messages ("the checkpoint is a classifier")
    data_format: str  # what a data file for it holds, in messages
    aliases: tuple[str, ...] = ()  # other names the data API (make_loader) accepts
    # other model classes that do the task, by (family, class name): a classifier on a
    # pre-trained decoder (``glassformer train --init-from``)
    other_models: tuple[tuple[str, str], ...] = ()

    @property
    def families(self) -> dict[str, str]:
        """{family: model class} of every model that does the task, its own first."""
        return {self.family: self.model_class, **dict(self.other_models)}


# fmt: off
TASKS: dict[str, Task] = {task.name: task for task in (
    Task("lm", family="decoder", model_class="DecoderLM", data="lm", preset="tiny",
         loss="next token", metrics=("loss", "perplexity"),
         help="decoder, next token", model_noun="language model", data_format="plain text"),
    Task("mlm", family="encoder", model_class="EncoderMLM", data="lm", preset="tiny-encoder",
         loss="masked tokens", metrics=("loss", "perplexity"),
         help="encoder, masked tokens", model_noun="masked LM", data_format="plain text"),
    Task("seq2seq", family="encoder-decoder", model_class="EncoderDecoder", data="seq2seq",
         preset="tiny-seq2seq", loss="target", metrics=("loss", "exact_match", "token_accuracy"),
         help="encoder-decoder", model_noun="seq2seq model",
         data_format="source,target pairs (source<TAB>target in a .tsv)"),
    Task("classify", aliases=("classification",), family="encoder",
         model_class="EncoderClassifier", data="classification", preset="tiny-encoder",
         loss="class", metrics=("loss", "accuracy"), help="encoder + classifier",
         model_noun="classifier", data_format="label,text rows (label<TAB>text in a .tsv)",
         other_models=(("decoder", "DecoderClassifier"),)),
)}
# fmt: on
TASK_NAMES: tuple[str, ...] = tuple(TASKS)
DATA_KINDS: tuple[str, ...] = tuple(dict.fromkeys(task.data for task in TASKS.values()))
_BY_NAME = {name: task for task in TASKS.values() for name in (task.name, *task.aliases)}


def get_task(name: str) -> Task:
    """The task called ``name`` (or one of its aliases)."""
    task = _BY_NAME.get(name) if isinstance(name, str) else None
    if task is None:
        raise ValueError(f"task is {name!r}: allowed {', '.join(map(repr, _BY_NAME))}")
    return task


def check_data_kind(kind: str) -> None:
    """Refuse a kind of examples that is not one of DATA_KINDS (the data API calls it the
    dataset's task)."""
    if kind not in DATA_KINDS:
        raise ValueError(f"task is {kind!r}: allowed {', '.join(map(repr, DATA_KINDS))}")


def task_for_data(kind: str) -> Task:
    """The task of a dataset of examples of ``kind``, when none is named: the first that reads
    them (lm for texts, seq2seq for pairs, classify for labelled texts)."""
    check_data_kind(kind)
    return next(task for task in TASKS.values() if task.data == kind)


def task_for_model(architecture: str) -> Task:
    """The task whose model is the class called ``architecture`` (``model.architecture()``)."""
    task = next((t for t in TASKS.values() if architecture in t.families.values()), None)
    if task is None:
        allowed = ", ".join(c for t in TASKS.values() for c in t.families.values())
        raise ValueError(f"architecture is {architecture!r}: allowed {allowed}")
    return task
