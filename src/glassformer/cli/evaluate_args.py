"""The options of ``glassformer eval`` (evaluate.py runs it)."""

from __future__ import annotations

from pathlib import Path

from .options import add_checkpoint, add_device, handler, non_negative, positive

__all__ = ["add_parser"]


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
        "--limit",
        type=positive,
        metavar="N",
        help="evaluate only the first N examples (for lm and mlm: windows of max_len tokens)",
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
        help="where to write the metrics (default: DIR/eval.json; when DIR is not writable "
        "the metrics are printed and the JSON is skipped with a note)",
    )
    add_device(p)
    p.set_defaults(handler=handler("evaluate"))
