"""``glassformer generate``: continue a prompt (decoder-only) or translate a source
(encoder-decoder), streaming the text to the terminal as the tokens are produced.

Without ``--max-new-tokens`` it makes up to 200 tokens, fewer where the model allows fewer
without sliding its window: an encoder-decoder (at most its max_len) and beam search (what fits
the context after the prompt). A decoder-only model that samples slides its window, and one
with sliding-window attention graphs that runs past max_len (``DecoderLM.length_limit``) has no
limit, so 200 (and up to ``MAX_NEW_TOKENS``) always works. Sizes are checked before anything
is allocated.
"""

from __future__ import annotations

import argparse
import math
import sys

from ..generation import GenerationConfig, encode_prompt, generate_text
from ..generation.config import MAX_BEAMS
from ..generation.job import max_new_tokens_allowed
from ..models import DecoderLM, EncoderDecoder
from .errors import UsageError
from .model_source import load_model_dir
from .options import add_checkpoint, add_device, non_negative, positive_up_to, utf8_text
from .textgen import continue_text

__all__ = ["DEFAULT_NEW_TOKENS", "MAX_NEW_TOKENS", "add_parser", "run"]

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
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Stream the continuation (or the encoder-decoder output) to stdout."""
    _check_beam_options(args)
    model, _ = load_model_dir(
        args.checkpoint, (DecoderLM, EncoderDecoder), "generate", args.device
    )
    seq2seq = isinstance(model, EncoderDecoder)
    temperature = args.temperature
    if temperature is None:
        temperature = 0.0 if seq2seq or args.num_beams > 1 else 0.8
    config = GenerationConfig(
        max_new_tokens=_new_tokens(model, args),
        temperature=temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        num_beams=args.num_beams,
        length_penalty=args.length_penalty,
        stop_strings=tuple(args.stop),
        seed=args.seed,
    )
    out = _Output(sys.stdout)
    try:
        if not seq2seq:
            out.write(args.prompt)
        if config.num_beams > 1:
            out.write(generate_text(model, model.tokenizer, args.prompt, config))
        else:
            for piece in continue_text(model, model.tokenizer, args.prompt, config):
                out.write(piece)
    except KeyboardInterrupt:
        out.end_line()  # "glassformer: interrupted" starts its own line
        raise
    out.write("\n")
    return 0


def _check_beam_options(args: argparse.Namespace) -> None:
    """``UsageError`` naming a sampling option given with --num-beams > 1: beam search does
    not sample, so those options keep their defaults (--temperature may be 0 or 1)."""
    if args.num_beams == 1:
        return
    given = (
        ("--top-k", args.top_k, (0,)),
        ("--top-p", args.top_p, (1,)),
        ("--temperature", args.temperature, (None, 0, 1)),
    )
    for option, value, allowed in given:
        if value in allowed or not math.isfinite(value):  # NaN: GenerationConfig names it
            continue
        beams = " or ".join(f"{option} {a}" for a in allowed if a is not None)
        raise UsageError(
            f"{option} {value:g} is not allowed with --num-beams {args.num_beams}, as beam "
            f"search does not sample: for beam search leave out {option} (or give {beams}); "
            f"to sample with {option} {value:g}, leave out --num-beams"
        )


def _new_tokens(model, args: argparse.Namespace) -> int:
    """--max-new-tokens, or its default capped at what the model allows (module docstring);
    a request the model cannot serve is refused here, before the prompt is printed."""
    if isinstance(model, DecoderLM) and (args.num_beams == 1 or model.length_limit() is None):
        return args.max_new_tokens or DEFAULT_NEW_TOKENS  # the window slides, or no limit
    prompt = len(encode_prompt(model, model.tokenizer, args.prompt))
    max_len = model.config.max_len
    if prompt > max_len:
        seq2seq = isinstance(model, EncoderDecoder)
        added = "<EOS>" if seq2seq else "<BOS>"
        why = "" if seq2seq else " and beam search does not slide the context window"
        raise UsageError(
            f"--prompt has {prompt} tokens (with {added}) but the model's max_len is "
            f"{max_len}{why}: shorten it"
        )
    room = max_new_tokens_allowed(model, prompt)
    if args.max_new_tokens is None:
        return min(DEFAULT_NEW_TOKENS, room)
    if args.max_new_tokens > room:
        why = (
            f"an encoder-decoder makes at most its max_len {max_len} tokens"
            if isinstance(model, EncoderDecoder)
            else f"beam search does not slide the context window: the prompt's {prompt} "
            f"tokens leave room for {room} in the model's max_len {max_len}"
        )
        raise UsageError(
            f"--max-new-tokens {args.max_new_tokens} is too many: {why}; allowed at most "
            f"{room} (or leave the option out)"
        )
    return args.max_new_tokens


class _Output:
    """stdout, flushed after every write, remembering whether the last line is unfinished."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.open_line = False

    def write(self, text: str) -> None:
        if text:
            self.stream.write(text)
            self.stream.flush()
            self.open_line = not text.endswith("\n")

    def end_line(self) -> None:
        if self.open_line:
            self.write("\n")
