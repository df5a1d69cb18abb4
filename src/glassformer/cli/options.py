"""Option types and options shared by the subcommands, and ``handler``, which names the
function that runs a command. Like every module the parsers are built from, it imports nothing
heavy: ``--help`` and the refusal of a bad option answer without importing PyTorch."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEVICES",
    "Handler",
    "add_checkpoint",
    "add_device",
    "handler",
    "non_negative",
    "positive",
    "positive_up_to",
    "utf8_text",
]

DEVICES = ("auto", "cpu", "cuda", "mps")


def _at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} must be >= {low}")
    return value


def non_negative(text: str) -> int:
    """argparse type: an int >= 0."""
    return _at_least(text, 0)


def positive(text: str) -> int:
    """argparse type: an int >= 1."""
    return _at_least(text, 1)


def positive_up_to(limit: int):
    """argparse type: an int in [1, limit] (a size checked before anything is allocated)."""

    def parse(text: str) -> int:
        value = positive(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{value} is too large: allowed 1 to {limit}")
        return value

    return parse


def utf8_text(text: str) -> str:
    """argparse type: text that is UTF-8. The command line hands bytes that are not UTF-8 to
    Python as lone surrogates (U+DC80..U+DCFF), which no tokenizer or page can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = ord(text[err.start])
        offset = len(text[: err.start].encode("utf-8", "surrogateescape"))
        if 0xDC80 <= bad <= 0xDCFF:
            what = f"byte 0x{bad - 0xDC00:02x} at offset {offset} is not UTF-8"
        else:
            what = f"a lone surrogate U+{bad:04X} at offset {offset}"
        raise argparse.ArgumentTypeError(f"not UTF-8 text ({what}); allowed: UTF-8 text") from None
    return text


def add_device(parser: argparse.ArgumentParser, default: str | None = "auto") -> None:
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=default,
        help="where to run (default auto: cuda, then mps, then cpu)",
    )


def add_checkpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        type=Path,
        metavar="DIR",
        help="a checkpoint folder (with config.json), a run folder (its best checkpoint "
        "when trainer.json records one, else its newest), or a Hugging Face model folder "
        "(GPT-2, BERT, BART, Llama; its tokenizer.json of any kind, or vocab.json and "
        "merges.txt)",
    )


@dataclass(frozen=True)
class Handler:
    """The function ``function`` of ``glassformer.cli.<module>``, which runs a command: the
    module is imported when the command runs (``load()``), not when the parser is built."""

    module: str
    function: str = "run"

    def load(self) -> Callable[[argparse.Namespace], int]:
        return getattr(importlib.import_module(f"{__package__}.{self.module}"), self.function)


def handler(module: str, function: str = "run") -> Handler:
    """The command's :class:`Handler` (``parser.set_defaults(handler=...)``)."""
    return Handler(module, function)
