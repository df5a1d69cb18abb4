"""Text continuation for the terminal: new text piece by piece, as tokens are produced.

A request that fits the model's context (prompt + new tokens <= max_len, or any
encoder-decoder request, or any request to a decoder that runs past max_len with its
sliding-window attention graphs, ``DecoderLM.length_limit``) is exactly
``glassformer.generation.stream_text``. A longer decoder-only request (e.g. 300 characters
from a model with a 64-token context) slides a window, as nanoGPT's sampler does: each chunk
is generated from the last ``max_len // 2`` tokens with the KV cache, then the window moves
on. Chunk k samples with seed ``seed + k``, so a seeded continuation is repeatable.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..generation import GenerationConfig, encode_prompt, stream, stream_text
from ..models import EncoderDecoder, GlassformerModel

__all__ = ["continue_text"]


def continue_text(
    model: GlassformerModel, tokenizer, prompt: str, config: GenerationConfig
) -> Iterator[str]:
    """Yield the new text after ``prompt``, piece by piece (see the module docstring)."""
    ids = encode_prompt(model, tokenizer, prompt)
    max_len = model.config.max_len
    if (
        isinstance(model, EncoderDecoder)
        or len(ids) + config.max_new_tokens - 1 <= max_len
        or model.length_limit() is None
    ):
        yield from stream_text(model, tokenizer, prompt, config)
        return
    yield from _windowed(model, tokenizer, ids, config)


def _windowed(model, tokenizer, ids: list[int], config: GenerationConfig) -> Iterator[str]:
    max_len = model.config.max_len
    keep = max(max_len // 2, 1)
    new: list[int] = []
    shown, chunk = 0, 0
    while len(new) < config.max_new_tokens:
        context = ids if chunk == 0 and len(ids) < max_len else (ids + new)[-keep:]
        n = min(config.max_new_tokens - len(new), max_len - len(context) + 1)
        seed = None if config.seed is None else (config.seed + chunk) % 2**64
        settings = config.replace(max_new_tokens=n, seed=seed)
        produced = 0
        for (token,) in stream(model, [context], settings, tokenizer=tokenizer):
            if token is None:
                break
            new.append(token)
            produced += 1
            text, stopped = _cut(tokenizer.decode(new, skip_special=True), config.stop_strings)
            complete = stopped or not text.endswith("\ufffd")  # else: half a character
            if complete and len(text) > shown:
                yield text[shown:]
                shown = len(text)
            if stopped:
                return
        if produced < n:  # <EOS> (or a stop string) ended the sequence
            break
        chunk += 1
    text, _ = _cut(tokenizer.decode(new, skip_special=True), config.stop_strings)
    if len(text) > shown:
        yield text[shown:]


def _cut(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to and including its earliest stop string, and whether one occurred."""
    ends = [text.find(s) + len(s) for s in stops if s in text]
    return (text[: min(ends)], True) if ends else (text, False)
