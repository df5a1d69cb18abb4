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
from ..generation.job import max_new_tokens_allowed
from ..models import DecoderLM, EncoderDecoder
from .errors import UsageError
from .generate_args import DEFAULT_NEW_TOKENS
from .model_source import load_model_dir
from .textgen import continue_text

__all__ = ["run"]

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
