"""``glassformer eval``: the task's validation metrics of a checkpoint, printed and as JSON
(computed by ``glassformer.runs.evaluate_model``, which ``Run.evaluate()`` calls too).

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

from ..models.registry import model_class
from ..runs import evaluate_model, output_file, parse_assignment, write_json
from ..tasks import TASKS
from .errors import UsageError
from .model_source import load_model_dir
from .notes import shown_notes
from .scale import scale_from_env
from .threads import use_free_cores

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Evaluate the checkpoint, print the metrics and write them as JSON."""
    scale = scale_from_env()
    path = args.json or args.checkpoint / "eval.json"
    if args.json is not None:
        output_file(path, "--json")  # before anything is loaded
    kinds = tuple(model_class(c) for t in TASKS.values() for c in t.families.values())
    model, folder = load_model_dir(args.checkpoint, kinds, "eval", args.device)
    if getattr(args, "free_cores", False):  # run as a command: threads.py
        use_free_cores()
    with shown_notes():  # e.g. a token cache that cannot be written
        report = evaluate_model(
            model,
            folder,
            args.data,
            split=args.split,
            data_options=_data_options(args.set),
            batch_size=args.batch_size,
            limit=args.limit,
            batches=args.batches,
            seed=args.seed,
            progress="bar" if sys.stderr.isatty() else "lines",  # a log file or pipe gets lines
            scale=scale,
        )
    # written before printing: a reader that closes the pipe early loses nothing
    note = _write(path, report, explicit=args.json is not None)
    _print(report, model.config.max_len)
    if note is None:
        print(f"wrote {path}")
    else:
        print(f"glassformer: note: {note}", file=sys.stderr)
    return 0


def _data_options(assignments: list[str]) -> dict[str, Any]:
    """The --set data.KEY=VALUE settings as the dataset's options."""
    options: dict[str, Any] = {}
    for text in assignments:
        section, key, value = parse_assignment(text)
        if section != "data":
            raise UsageError(f"--set {text}: eval takes only data.KEY=VALUE settings")
        options[key] = value
    return options


def _print(report: dict[str, Any], max_len: int) -> None:
    task, metrics = report["task"], report["metrics"]
    examples, available = report["examples"], report["examples_in_split"]
    unit = f"windows of at most {max_len} tokens" if TASKS[task].data == "lm" else "examples"
    if examples < available:
        counted = f"the first {examples} of {available} {unit}"
    else:
        counted = f"{examples} {unit}"
    print(
        f"{task} metrics of {report['checkpoint']} on {report['data']} ({report['split']}, "
        f"{counted}):"
    )
    width = max(map(len, metrics))
    for name, value in metrics.items():
        print(f"  {name:<{width}}  {value:.6g}")


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
