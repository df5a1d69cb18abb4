"""Option types and options shared by the subcommands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .errors import UsageError

__all__ = [
    "DEVICES",
    "add_checkpoint",
    "add_device",
    "non_negative",
    "output_dir",
    "output_file",
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
        help="a checkpoint folder (with config.json) or a run folder (its best checkpoint "
        "when trainer.json records one, else its newest)",
    )


def output_dir(path: Path, option: str) -> None:
    """``UsageError`` unless ``path`` is a directory, or can be made one, that this user may
    write into; checked before a command loads or computes anything."""
    if os.path.lexists(path) and not path.is_dir():  # a file, or a link to nothing
        raise UsageError(
            f"{option} {path}: exists and is not a directory; allowed: a new or existing directory"
        )
    _writable_parent(path, option)


def output_file(path: Path, option: str) -> None:
    """``UsageError`` unless ``path`` names a file this user may create or replace."""
    if path.is_dir():
        raise UsageError(
            f"{option} {path}: is a directory; allowed: a file name (a new file, or one to replace)"
        )
    _writable_parent(path.parent, option, path)


def _writable_parent(path: Path, option: str, named: Path | None = None) -> None:
    """The nearest existing folder at or above ``path`` must be a writable directory."""
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    shown = named or path
    if not existing.is_dir():
        raise UsageError(f"{option} {shown}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {shown}: the directory {existing} is not writable")
