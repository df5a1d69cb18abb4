"""The options of ``glassformer predict`` (predict.py runs it)."""

from __future__ import annotations

from pathlib import Path

from .options import add_checkpoint, add_device, handler, positive, utf8_text

__all__ = ["add_parser"]


def add_parser(commands) -> None:
    p = commands.add_parser(
        "predict",
        help="classify texts, or fill <MASK> with a masked-LM checkpoint",
        description="With a classifier checkpoint: the predicted label and its probability for "
        "each text. With a masked-LM checkpoint: the top-k candidates for each <MASK> (written "
        "literally in the text). One line per input; --json writes JSON lines instead. An empty "
        "text, or one longer than the model's max_len, is refused (a classifier's long text is "
        "cut with --truncate).",
    )
    add_checkpoint(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--text", nargs="+", type=utf8_text, metavar="TEXT", help="one or more input texts"
    )
    source.add_argument(
        "--file", type=Path, metavar="PATH", help="a UTF-8 file, one input per non-blank line"
    )
    p.add_argument(
        "--top-k",
        type=positive,
        metavar="K",
        help="candidates per <MASK> (default 5) or labels per text (default 1)",
    )
    p.add_argument(
        "--truncate",
        action="store_true",
        help="classifier checkpoints: cut a text longer than the model's max_len to max_len "
        "tokens (its start and <EOS>) instead of refusing it",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per input")
    add_device(p)
    p.set_defaults(handler=handler("predict"))
