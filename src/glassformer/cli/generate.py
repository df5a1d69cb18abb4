"""``glassformer generate``: continue a prompt (decoder-only) or translate a source
(encoder-decoder), streaming the text to the terminal as the tokens are produced."""

from __future__ import annotations

import argparse
import sys

from ..generation import GenerationConfig, generate_text
from ..models import DecoderLM, EncoderDecoder
from .options import add_checkpoint, add_device, non_negative, positive
from .runs import load_checkpoint
from .textgen import continue_text

__all__ = ["add_parser", "run"]


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
    p.add_argument("--prompt", default="", help="the text to continue or translate ('')")
    p.add_argument(
        "--max-new-tokens",
        type=positive,
        default=200,
        metavar="N",
        help="tokens to generate at most (200); a decoder-only model slides its context "
        "window when prompt + N exceeds it",
    )
    p.add_argument(
        "--temperature",
        type=float,
        metavar="T",
        help="sample from p^(1/T); 0 is greedy (default: 0.8 decoder-only, 0 encoder-decoder)",
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
        type=positive,
        default=1,
        metavar="N",
        help="beam search with N beams (1: no beam search)",
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
        action="append",
        default=[],
        metavar="TEXT",
        help="stop once the output contains TEXT (repeatable); generation also stops at <EOS>",
    )
    add_device(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Stream the continuation (or the encoder-decoder output) to stdout."""
    model, _ = load_checkpoint(
        args.checkpoint, (DecoderLM, EncoderDecoder), "generate", args.device
    )
    seq2seq = isinstance(model, EncoderDecoder)
    temperature = args.temperature
    if temperature is None:
        temperature = 0.0 if seq2seq or args.num_beams > 1 else 0.8
    config = GenerationConfig(
        max_new_tokens=args.max_new_tokens,
        temperature=temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        num_beams=args.num_beams,
        length_penalty=args.length_penalty,
        stop_strings=tuple(args.stop),
        seed=args.seed,
    )
    out = sys.stdout
    if not seq2seq:
        out.write(args.prompt)
        out.flush()
    if config.num_beams > 1:
        out.write(generate_text(model, model.tokenizer, args.prompt, config))
    else:
        for piece in continue_text(model, model.tokenizer, args.prompt, config):
            out.write(piece)
            out.flush()
    out.write("\n")
    return 0
