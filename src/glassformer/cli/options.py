"""Option types and options shared by the subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["DEVICES", "add_checkpoint", "add_device", "non_negative", "positive", "positive_up_to"]

DEVICES = ("auto", "cpu", "cuda", "mps")


def non_negative(text: str) -> int:
    """argparse type: an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def positive(text: str) -> int:
    """argparse type: an int >= 1."""
    value = non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def positive_up_to(limit: int):
    """argparse type: an int in [1, limit] (a size checked before anything is allocated)."""

    def parse(text: str) -> int:
        value = positive(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{value} is too large: allowed 1 to {limit}")
        return value

    return parse


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
