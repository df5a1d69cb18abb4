"""``glassformer eval``: the task's validation metrics of a checkpoint, printed and as JSON.

The task follows the checkpoint's architecture (DecoderLM: lm, EncoderMLM: mlm,
EncoderDecoder: seq2seq, EncoderClassifier: classify); the metrics are the trainer's
(``glassformer.training.evaluate``): loss and perplexity, accuracy for a classifier, exact
match and token accuracy of greedy decoding for seq2seq, over every example of the data, or
of its first ``--limit`` examples, or of its first ``--batches`` batches (the last batch may be
smaller). An example is a pair or labelled text; for lm and mlm it is a window of at most
``max_len`` tokens of the concatenated text (``glassformer.data.encoding``). The loss is the
mean over every scored token (every example for a classifier). While it runs, the examples
scored and then those decoded are shown on stderr as ``train`` shows its steps (a bar in a
terminal, a line at each tenth in a pipe or log; progress.py).

A ``--data`` file is checked against the checkpoint's task first (``evaldata``: another
task's header row, seq2seq pairs that look like labelled texts, text that is mostly
``<UNK>``); the JSON is written, through a temporary file and a rename, only once the metrics
are computed, so a refused or failed evaluation leaves an existing one as it was. ``--json
PATH`` is checked before anything is loaded; the default, ``eval.json`` beside the checkpoint
(in the run folder when a run folder is given), is skipped with a note when it cannot be
written (a read-only folder): the metrics are printed all the same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from torch.utils.data import Subset

from ..data import TextDataset
from ..models.registry import model_class
from ..runs.claim import output_file
from ..runs.datasets import align_labels, load_split, validation_options
from ..runs.evaldata import check_dataset, check_header
from ..runs.plan import is_builtin
from ..runs.record import RUN_FILE, read_run, write_json
from ..runs.scale import note_scale, scaled_batches
from ..runs.settings import parse_assignment
from ..structured import loads_json
from ..tasks import TASKS, task_for_model
from ..training import BatchStream, evaluate
from .errors import UsageError
from .model_source import load_model_dir
from .threads import use_free_cores

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Evaluate the checkpoint, print the metrics and write them as JSON."""
    note_scale()
    path = args.json or args.checkpoint / "eval.json"
    if args.json is not None:
        output_file(path, "--json")  # before anything is loaded
    kinds = tuple(model_class(c) for t in TASKS.values() for c in t.families.values())
    model, folder = load_model_dir(args.checkpoint, kinds, "eval", args.device)
    task = task_for_model(model.architecture()).name
    dataset = _dataset(args, folder, task)
    if task == "classify":  # the file's labels by the model's class names, never by order
        dataset = align_labels(dataset, tuple(model.class_names()))
    if args.data is not None and not is_builtin(args.data):
        check_dataset(dataset, task, model.tokenizer)
    shown = "bar" if sys.stderr.isatty() else "lines"  # a log file or pipe gets lines
    stream, available = _stream(model, dataset, task, args, _train_config(folder), shown)
    n_batches = scaled_batches(min(args.batches or len(stream), len(stream)))
    examples = min(n_batches * stream.batch_size, len(stream.dataset))
    n_generate = examples if "exact_match" in TASKS[task].metrics else 0
    device = next(model.parameters()).device
    if getattr(args, "free_cores", False):  # run as a command: threads.py
        use_free_cores()
    metrics = evaluate(
        model, task, stream, n_batches, device, generate_examples=n_generate, progress=shown
    )
    report = {
        "checkpoint": str(folder),
        "task": task,
        "data": dataset.name,
        "split": dataset.split,
        "examples": examples,
        "examples_in_split": available,
        "metrics": metrics,
    }
    # written before printing: a reader that closes the pipe early loses nothing
    note = _write(path, report, explicit=args.json is not None)
    windows = TASKS[task].data == "lm"
    unit = f"windows of at most {model.config.max_len} tokens" if windows else "examples"
    if examples < available:
        counted = f"the first {examples} of {available} {unit}"
    else:
        counted = f"{examples} {unit}"
    print(f"{task} metrics of {folder} on {dataset.name} ({dataset.split}, {counted}):")
    width = max(map(len, metrics))
    for name, value in metrics.items():
        print(f"  {name:<{width}}  {value:.6g}")
    if note is None:
        print(f"wrote {path}")
    else:
        print(f"glassformer: note: {note}", file=sys.stderr)
    return 0


def _write(path: Path, report: dict[str, Any], *, explicit: bool) -> str | None:
    """Write the report as JSON at ``path``; where the default location (beside the
    checkpoint) cannot be written, say why instead: the note to print."""
    try:
        write_json(path, report)
    except OSError as err:
        reason = err.strerror or str(err)
        if explicit:
            raise UsageError(f"--json {path}: not written ({reason})") from None
        return (
            f"{path} was not written ({reason}); the metrics are above, and --json PATH "
            "writes them elsewhere"
        )
    return None


def _run_dir(folder: Path) -> Path | None:
    for candidate in (folder, folder.parent.parent):
        if (candidate / RUN_FILE).is_file():
            return candidate
    return None


def _dataset(args: argparse.Namespace, folder: Path, task: str) -> TextDataset:
    options: dict[str, Any] = {}
    for text in args.set:
        section, key, value = parse_assignment(text)
        if section != "data":
            raise UsageError(f"--set {text}: eval takes only data.KEY=VALUE settings")
        options[key] = value
    if args.data is not None:
        if not is_builtin(args.data):
            check_header(Path(args.data), task)
        return load_split(args.data, args.split, task, options)
    run_dir = _run_dir(folder)
    if run_dir is None:
        raise UsageError(f"{folder} is not part of a run with a {RUN_FILE}; name the --data")
    plan, _ = read_run(run_dir)
    if args.split == "validation":
        name, base = plan.validation, validation_options(plan)
    else:
        name, base = plan.data, plan.data_options
    if name is None:
        raise UsageError(f"the run in {run_dir} has no validation data; name the --data")
    return load_split(name, args.split, task, {**base, **options})


def _train_config(folder: Path) -> dict[str, Any]:
    try:
        meta = loads_json((folder / "trainer.json").read_bytes(), "trainer.json")
        return dict(meta.get("train_config") or {})
    except (OSError, ValueError, AttributeError):
        return {}


def _stream(
    model, dataset, task: str, args, train_config: dict[str, Any], progress: str
) -> tuple[BatchStream, int]:
    """The batches to evaluate, of the first ``--limit`` examples (all without it), and how
    many examples the data holds (windows of ``max_len`` tokens for lm and mlm); ``progress``
    shows the encoding of a text file into the token cache."""
    stream = BatchStream.for_task(
        dataset,
        model.tokenizer,
        task,
        max_len=model.config.max_len,
        batch_size=args.batch_size,
        seed=args.seed,
        shuffle=False,
        drop_last=False,
        mlm_probability=train_config.get("mlm_probability", 0.15),
        decoder_start_id=model.config.decoder_start_id,  # seq2seq only (BART: </s>)
        progress=progress,
    )
    available = len(stream.dataset)
    if args.limit is None or args.limit >= available:
        return stream, available
    first = Subset(stream.dataset, range(args.limit))
    limited = BatchStream(
        first, stream.collate, args.batch_size, args.seed, shuffle=False, drop_last=False
    )
    return limited, available
