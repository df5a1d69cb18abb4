"""The options of ``glassformer generate`` (generate.py runs it)."""

from __future__ import annotations

from ..names import MAX_BEAMS
from .options import add_checkpoint, add_device, handler, non_negative, positive_up_to, utf8_text

__all__ = ["DEFAULT_NEW_TOKENS", "MAX_NEW_TOKENS", "add_parser"]

DEFAULT_NEW_TOKENS = 200
MAX_NEW_TOKENS = 100_000  # a sliding decoder-only model could otherwise go on for ever


def add_parser(commands) -> None:
    p = commands.add_parser(
        "generate",
        help="generate text from a decoder-only or encoder-decoder checkpoint",
        description="Continue --prompt with a decoder-only model (the prompt is printed, then "
        "the new text as it is produced), or give an encoder-decoder model's output for the "
        "source text --prompt. Sampling with a --seed is repeatable; --temperature 0 is greedy; "
        "--num-beams > 1 runs beam search (printed when it ends).",
    )
    add_checkpoint(p)
    p.add_argument(
        "--prompt", type=utf8_text, default="", help="the text to continue or translate ('')"
    )
    p.add_argument(
        "--max-new-tokens",
        type=positive_up_to(MAX_NEW_TOKENS),
        metavar="N",
        help=f"tokens to generate at most, up to {MAX_NEW_TOKENS} (default {DEFAULT_NEW_TOKENS}, "
        "or the most the model allows when fewer: an encoder-decoder's max_len, or with "
        "--num-beams what fits the context after the prompt); a decoder-only model that "
        "samples slides its context window when prompt + N exceeds it",
    )
    p.add_argument(
        "--temperature",
        type=float,
        metavar="TAU",
        help="sample from p^(1/τ), τ the temperature; 0 is greedy "
        "(default: 0.8 decoder-only, 0 encoder-decoder)",
    )
    p.add_argument(
        "--top-k",
        type=non_negative,
        default=0,
        metavar="K",
        help="sample only from the K likeliest tokens (0: off)",
    )
    p.add_argument(
        "--top-p",
        type=float,
        default=1.0,
        metavar="P",
        help="nucleus sampling: the likeliest tokens whose probabilities sum to P (1: off)",
    )
    p.add_argument(
        "--num-beams",
        type=positive_up_to(MAX_BEAMS),
        default=1,
        metavar="N",
        help=f"beam search with N beams, up to {MAX_BEAMS} (1: no beam search)",
    )
    p.add_argument(
        "--length-penalty",
        type=float,
        default=1.0,
        metavar="A",
        help="beam search ranks log P / length^A (1.0)",
    )
    p.add_argument("--seed", type=non_negative, metavar="N", help="seed of the sampling")
    p.add_argument(
        "--stop",
        type=utf8_text,
        action="append",
        default=[],
        metavar="TEXT",
        help="stop once the output contains TEXT (repeatable); generation also stops at <EOS>",
    )
    add_device(p)
    p.set_defaults(handler=handler("generate"))
