"""A checkpoint's validation metrics on a dataset: what ``Run.evaluate()`` and
``glassformer eval`` return.

The task follows the model's architecture (DecoderLM: lm, EncoderMLM: mlm, EncoderDecoder:
seq2seq, EncoderClassifier: classify); the metrics are the trainer's
(``glassformer.training.evaluate``): loss and perplexity, accuracy for a classifier, exact
match and token accuracy of greedy decoding for seq2seq, over every example of the data, or
of its first ``limit`` examples, or of its first ``batches`` batches (the last batch may be
smaller). An example is a pair or labelled text; for lm and mlm it is a window of at most
``max_len`` tokens of the concatenated text (``glassformer.data.encoding``). The loss is the
mean over every scored token (every example for a classifier).

A ``data`` file is checked against the model's task first (evaldata.py: another task's
header row, seq2seq pairs that look like labelled texts, text that is mostly ``<UNK>``).
Without ``data``, the run the checkpoint belongs to (run.json in its folder or two above)
gives its validation data (``split="validation"``) or its training data (``"train"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch.utils.data import Subset

from ..data import TextDataset
from ..structured import loads_json
from ..tasks import TASKS, task_for_model
from ..training import BatchStream, evaluate
from .datasets import align_labels, load_split, validation_options
from .errors import RunError
from .evaldata import check_dataset, check_header
from .folder import RUN_FILE
from .plan import is_builtin
from .record import read_run
from .scale import check_scale, scaled

if TYPE_CHECKING:
    from ..models import GlassformerModel

__all__ = ["evaluate_model"]


def evaluate_model(
    model: GlassformerModel,
    folder: str | Path,
    data: str | None = None,
    *,
    split: str = "validation",
    data_options: dict[str, Any] | None = None,
    batch_size: int = 32,
    limit: int | None = None,
    batches: int | None = None,
    seed: int = 1337,
    progress: bool | str = False,
    scale: float | None = None,
) -> dict[str, Any]:
    """The validation metrics of ``model`` (loaded from the checkpoint ``folder``).

    Args:
        model: the model, with its tokenizer.
        folder: the checkpoint folder it was loaded from (its trainer.json, its run).
        data: a built-in dataset or a file; None: the run's own (see the module docstring).
        split: "validation" or "train".
        data_options: the dataset's options (``overflow``, fields, ...) over the run's.
        batch_size: examples per batch.
        limit: the first ``limit`` examples only.
        batches: the first ``batches`` batches only.
        seed: the seed of the masked-LM masks.
        progress: False, "lines" or "bar": the examples scored, then those decoded.
        scale: a test aid that reads F times the batches (scale.py).

    Returns:
        The report: checkpoint, task, data, split, examples, examples_in_split and metrics
        (name -> value), as ``glassformer eval`` writes it to eval.json.

    Raises:
        RunError: no data is given and the checkpoint is not part of a run, or the data are
            not of the model's task.
    """
    folder = Path(folder)
    task = task_for_model(model.architecture()).name
    dataset = _dataset(folder, task, data, split, data_options or {})
    if task == "classify":  # the file's labels by the model's class names, never by order
        dataset = align_labels(dataset, tuple(model.class_names()))
    if data is not None and not is_builtin(data):
        check_dataset(dataset, task, model.tokenizer)
    stream, available = _stream(model, dataset, task, batch_size, limit, seed, folder, progress)
    n_batches = min(batches or len(stream), len(stream))
    if scale is not None:
        n_batches = scaled(n_batches, check_scale(scale))
    examples = min(n_batches * stream.batch_size, len(stream.dataset))
    n_generate = examples if "exact_match" in TASKS[task].metrics else 0
    device = next(model.parameters()).device
    metrics = evaluate(
        model, task, stream, n_batches, device, generate_examples=n_generate, progress=progress
    )
    return {
        "checkpoint": str(folder),
        "task": task,
        "data": dataset.name,
        "split": dataset.split,
        "examples": examples,
        "examples_in_split": available,
        "metrics": metrics,
    }


def run_of(folder: Path) -> Path | None:
    """The run folder a checkpoint folder belongs to (itself, or two folders up), if any."""
    for candidate in (folder, folder.parent.parent):
        if (candidate / RUN_FILE).is_file():
            return candidate
    return None


def _dataset(folder: Path, task: str, data, split: str, options: dict) -> TextDataset:
    if data is not None:
        if not is_builtin(data):
            check_header(Path(data), task)
        return load_split(data, split, task, options)
    run_dir = run_of(folder)
    if run_dir is None:
        raise RunError(
            f"{folder} is not part of a run with a {RUN_FILE}; give data=FILE",
            names=["data"],
        )
    plan, _ = read_run(run_dir)
    if split == "validation":
        name, base = plan.validation, validation_options(plan)
    else:
        name, base = plan.data, plan.data_options
    if name is None:
        raise RunError(
            f"the run in {run_dir} has no validation data; give data=FILE", names=["data"]
        )
    return load_split(name, split, task, {**base, **options})


def _train_config(folder: Path) -> dict[str, Any]:
    try:
        meta = loads_json((folder / "trainer.json").read_bytes(), "trainer.json")
        return dict(meta.get("train_config") or {})
    except (OSError, ValueError, AttributeError):
        return {}


def _stream(model, dataset, task, batch_size, limit, seed, folder, progress):
    """The batches to evaluate, of the first ``limit`` examples (all without it), and how
    many examples the data holds (windows of ``max_len`` tokens for lm and mlm); ``progress``
    shows the encoding of a text file into the token cache."""
    stream = BatchStream.for_task(
        dataset,
        model.tokenizer,
        task,
        max_len=model.config.max_len,
        batch_size=batch_size,
        seed=seed,
        shuffle=False,
        drop_last=False,
        mlm_probability=_train_config(folder).get("mlm_probability", 0.15),
        decoder_start_id=model.config.decoder_start_id,  # seq2seq only (BART: </s>)
        progress=progress,
    )
    available = len(stream.dataset)
    if limit is None or limit >= available:
        return stream, available
    first = Subset(stream.dataset, range(limit))
    limited = BatchStream(first, stream.collate, batch_size, seed, shuffle=False, drop_last=False)
    return limited, available
