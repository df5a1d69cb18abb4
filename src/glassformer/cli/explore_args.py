"""The options of ``glassformer explore`` (explore_cmd.py runs it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import add_checkpoint, add_device, handler, positive_up_to, utf8_text

__all__ = ["add_parser"]


def add_parser(commands) -> None:
    p = commands.add_parser(
        "explore",
        help="a local web page to look inside a checkpoint: attention, masks, graphs, the "
        "residual stream, the logit lens, attribution and predictions",
        description="Serve the explorer for a checkpoint on http://HOST:PORT/ (a page: type a "
        "text and walk through every layer and head), or with --export write the page for "
        "--text as one self-contained HTML file (no server, no network).",
    )
    add_checkpoint(p)
    p.add_argument("--port", type=_port, default=8000, help="(default 8000; 0: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only); the page answers "
        "requests addressed to it by this name or localhost, so give the address that others "
        "will type (this machine's IP or name) rather than 0.0.0.0",
    )
    p.add_argument(
        "--text", type=utf8_text, help="the input to show first (required with --export)"
    )
    p.add_argument(
        "--target", type=utf8_text, help="encoder-decoder: the decoder's text (default: greedy)"
    )
    p.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="write the page to FILE (its folder is made when missing) and exit",
    )
    p.add_argument(
        "--top-k", type=positive_up_to(50), default=5, help="tokens listed per position (5)"
    )
    add_device(p)
    p.set_defaults(handler=handler("explore_cmd", "run_explore"))


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: a port in 0..65535")
    return value
