"""The options of ``glassformer inspect`` and ``glassformer trace`` (inspect_cmd.py runs them;
inspect_circuits.py draws what --circuits asks for)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import add_checkpoint, add_device, handler, non_negative, positive, utf8_text

__all__ = ["add_parser"]


def add_parser(commands) -> None:
    """Register ``inspect`` and ``trace`` on the subcommand parsers ``commands``."""
    p = commands.add_parser(
        "inspect",
        help="draw attention maps and graphs, masks, the residual stream and positional encodings",
        description="Run a checkpoint on --text and write PNG pictures into --out: a grid of "
        "attention heatmaps (layers x heads), enlarged heads, the masks applied, the residual "
        "stream's norm through the layers and the positional-encoding matrix; and the GNN "
        "view: each layer's attention graph, the learned attention drawn as a weighted graph "
        "and the receptive field of one position through the layers; with --circuits, the "
        "circuits view of one prediction (each head's direct logit attribution, the logit "
        "lens, the OV and QK singular values, activation patching); with index.md saying "
        "which file shows what.",
    )
    _common(p)
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder for the PNGs")
    p.add_argument("--layers", nargs="+", type=non_negative, metavar="L", help="(all)")
    p.add_argument(
        "--heads",
        nargs="+",
        type=non_negative,
        metavar="H",
        help="heads in the grid, each also drawn enlarged (default all; one enlarged)",
    )
    p.add_argument(
        "--cross", action="store_true", help="also the cross-attention (encoder-decoder)"
    )
    p.add_argument(
        "--pad-to",
        type=positive,
        metavar="N",
        help="pad the input to N tokens, to see the padding mask at work",
    )
    p.add_argument(
        "--threshold",
        type=_weight,
        default=0.1,
        metavar="W",
        help="the learned attention graph draws the edges with A_ij > W (default 0.1)",
    )
    p.add_argument(
        "--position",
        type=non_negative,
        metavar="N",
        help="the position whose receptive field is drawn, and with --circuits whose "
        "prediction is analysed (default the last token; a masked LM's first <MASK>)",
    )
    _circuits(p)
    p.set_defaults(handler=handler("inspect_cmd", "run_inspect"))

    p = commands.add_parser(
        "trace",
        help="print each step of the forward pass with its formula, shapes and values",
        description="Walk through the forward pass of a checkpoint on --text: embedding, "
        "positional encoding, each block's norm, Q/K/V projections, scores, mask, softmax, "
        "weighted sum, output projection, residual and feed-forward, then the head; each step "
        "the model's own tensors (read at its hook points in one forward pass), with its "
        "formula (Eq. 1-5 of the notes), shapes, the first "
        "values of each tensor at the last token and the last token's attention row in every "
        "head; then the prediction (next token, <MASK> or class) with its probability.",
    )
    _common(p)
    p.add_argument("--layer", type=non_negative, metavar="N", help="show only block N")
    p.set_defaults(handler=handler("inspect_cmd", "run_trace"))


def _common(p: argparse.ArgumentParser) -> None:
    add_checkpoint(p)
    p.add_argument(
        "--text",
        required=True,
        type=utf8_text,
        help="the input text (an encoder-decoder's source)",
    )
    p.add_argument(
        "--target",
        type=utf8_text,
        help="encoder-decoder: the decoder's text (default: the model's greedy output)",
    )
    add_device(p)


def _circuits(p: argparse.ArgumentParser) -> None:
    """--circuits and its options on the ``inspect`` parser."""
    p.add_argument(
        "--circuits",
        action="store_true",
        help="also the circuits view of the prediction at --position: each head's direct logit "
        "attribution, the logit lens, the OV/QK singular values, activation patching",
    )
    p.add_argument(
        "--answer",
        type=utf8_text,
        metavar="TOKEN",
        help="with --circuits: the token (or class) whose logit is analysed (default: the "
        "model's prediction)",
    )
    p.add_argument(
        "--wrong",
        type=utf8_text,
        metavar="TOKEN",
        help="with --circuits: analyse the logit difference --answer minus this token's",
    )
    p.add_argument(
        "--corrupt",
        type=utf8_text,
        metavar="TEXT",
        help="with --circuits: the corrupted input for patching, as many tokens as --text "
        "(default: the input's tokens shuffled, seed 0)",
    )


def _weight(text: str) -> float:
    """argparse type: an attention weight threshold in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{value:g} is not allowed: a weight in [0, 1)")
    return value
