"""``glassformer eval``: the task's validation metrics of a checkpoint, printed and as JSON.

The task follows the checkpoint's architecture (DecoderLM: lm, EncoderMLM: mlm,
EncoderDecoder: seq2seq, EncoderClassifier: classify); the metrics are the trainer's
(``glassformer.training.evaluate``): loss and perplexity, accuracy for a classifier, exact
match and token accuracy of greedy decoding for seq2seq, over every example of the first
``--batches`` batches (all of them by default; the last batch may be smaller). An example is a
pair or labelled text; for lm and mlm it is a window of at most ``max_len`` tokens of the
concatenated text (``glassformer.data.encoding``). The loss is the mean over every scored
token (every example for a classifier).

A ``--data`` file is checked against the checkpoint's task first (``evaldata``: another
task's header row, seq2seq pairs that look like labelled texts, text that is mostly
``<UNK>``); the JSON is written, through a temporary file and a rename, only once the metrics
are computed, so a refused or failed evaluation leaves an existing one as it was.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..data import TextDataset
from ..models.registry import model_class
from ..tasks import TASKS, task_for_model
from ..training import BatchStream, evaluate
from .datasets import align_labels, load_split
from .errors import UsageError
from .evaldata import check_dataset, check_header
from .options import add_checkpoint, add_device, non_negative, output_file, positive
from .plan import is_builtin
from .runs import RUN_FILE, load_checkpoint, read_run, write_json
from .scale import note_scale, scaled_batches
from .settings import parse_assignment

__all__ = ["add_parser", "run"]


def add_parser(commands) -> None:
    p = commands.add_parser(
        "eval",
        help="print a checkpoint's metrics on a dataset and write them as JSON",
        description="Print a checkpoint's metrics on a dataset (the task follows the "
        "checkpoint: lm and mlm loss and perplexity, classify accuracy, seq2seq exact match and "
        "token accuracy of greedy decoding) and write them as JSON.",
    )
    add_checkpoint(p)
    p.add_argument(
        "--data",
        metavar="NAME|PATH",
        help="a built-in dataset or a file in the task's format (a file that looks like "
        "another task's data is refused); default: the run's validation data (from run.json)",
    )
    p.add_argument(
        "--split",
        choices=("train", "validation"),
        default="validation",
        help="the split of a built-in dataset (default: validation)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="data.KEY=VALUE",
        help="a dataset option, e.g. data.num_examples=500 (repeatable)",
    )
    p.add_argument(
        "--batches", type=positive, metavar="N", help="evaluate only the first N batches"
    )
    p.add_argument(
        "--batch-size", type=positive, default=32, metavar="N", help="examples per batch (32)"
    )
    p.add_argument(
        "--seed",
        type=non_negative,
        default=1337,
        metavar="N",
        help="seed of the masked-LM masks (1337)",
    )
    p.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="where to write the metrics (default: DIR/eval.json)",
    )
    add_device(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate the checkpoint, print the metrics and write them as JSON."""
    note_scale()
    path = args.json or args.checkpoint / "eval.json"
    if args.json is not None or args.checkpoint.is_dir():
        output_file(path, "--json")  # before anything is loaded
    kinds = tuple(model_class(t.model_class) for t in TASKS.values())
    model, folder = load_checkpoint(args.checkpoint, kinds, "eval", args.device)
    task = task_for_model(model.architecture()).name
    dataset = _dataset(args, folder, task)
    labels = model.config.extra.get("labels")
    if task == "classify" and labels:
        dataset = align_labels(dataset, tuple(labels))
    if args.data is not None and not is_builtin(args.data):
        check_dataset(dataset, task, model.tokenizer)
    stream = _stream(model, dataset, task, args, _train_config(folder))
    n_batches = scaled_batches(min(args.batches or len(stream), len(stream)))
    examples = min(n_batches * stream.batch_size, len(stream.dataset))
    n_generate = examples if "exact_match" in TASKS[task].metrics else 0
    device = next(model.parameters()).device
    metrics = evaluate(model, task, stream, n_batches, device, generate_examples=n_generate)
    report = {
        "checkpoint": str(folder),
        "task": task,
        "data": dataset.name,
        "split": dataset.split,
        "examples": examples,
        "metrics": metrics,
    }
    write_json(path, report)  # before printing: a reader that closes the pipe early loses nothing
    windows = TASKS[task].data == "lm"
    unit = f"windows of at most {model.config.max_len} tokens" if windows else ""
    what = f"{dataset.split}, {examples} {unit or 'examples'}"
    print(f"{task} metrics of {folder} on {dataset.name} ({what}):")
    width = max(map(len, metrics))
    for name, value in metrics.items():
        print(f"  {name:<{width}}  {value:.6g}")
    print(f"wrote {path}")
    return 0


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
    name = plan.validation if args.split == "validation" else plan.data
    if name is None:
        raise UsageError(f"the run in {run_dir} has no validation data; name the --data")
    same_kind = is_builtin(name) == is_builtin(plan.data)
    base = plan.data_options if same_kind else {}
    return load_split(name, args.split, task, {**base, **options})


def _train_config(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / "trainer.json").read_text(encoding="utf-8"))
        return dict(meta.get("train_config") or {})
    except (OSError, ValueError, AttributeError):
        return {}


def _stream(model, dataset, task: str, args, train_config: dict[str, Any]) -> BatchStream:
    return BatchStream.for_task(
        dataset,
        model.tokenizer,
        task,
        max_len=model.config.max_len,
        batch_size=args.batch_size,
        seed=args.seed,
        shuffle=False,
        drop_last=False,
        mlm_probability=train_config.get("mlm_probability", 0.15),
    )
