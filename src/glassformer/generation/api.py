"""The public entry points: prompt -> ids -> model with KV cache -> sampler / beam search -> ids
-> text.

    generate(model, inputs, config)        ids in, GenerationOutput out (batch, beams, texts)
    stream(model, inputs, config)          iterator: the new token of every input, step by step
    generate_text(model, tokenizer, ...)   text in, text out
    stream_text(model, tokenizer, prompt)  iterator: new text as it is produced (for terminals)

``inputs`` are ids: a (B, T) tensor (with ``attention_mask`` if padded), one list of ids, or a
list of lists of different lengths, padded here (on the left for a DecoderLM, so every next
token lands in the same column; on the right for an EncoderDecoder's source). Settings come
from a GenerationConfig, keyword arguments overriding it. Generation runs in eval mode under
torch.inference_mode; the model's train/eval mode, and its weights' memory layout (see
``layout``), are restored afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from torch import Tensor

from ..models import EncoderDecoder, GlassformerModel
from ..tokenizers import Tokenizer
from .config import GenerationConfig
from .job import GenerationJob
from .outputs import GenerationOutput
from .stopping import cut_at_stop

__all__ = ["generate", "generate_text", "stream", "stream_text"]

Inputs = Tensor | Sequence[int] | Sequence[Sequence[int]]
StepCallback = Callable[[list[int | None]], None]


def generate(
    model: GlassformerModel,
    inputs: Inputs,
    config: GenerationConfig | None = None,
    *,
    attention_mask: Tensor | None = None,
    tokenizer: Tokenizer | None = None,
    on_step: StepCallback | None = None,
    **settings: Any,
) -> GenerationOutput:
    """Continue each prompt (DecoderLM) or translate each source (EncoderDecoder).

    Greedy decoding, sampling (temperature, top-k, top-p) or beam search, as the settings
    say, with a KV cache; the model runs in eval mode and is restored afterwards.

    Args:
        model: a `DecoderLM` (prompts to continue) or an `EncoderDecoder` (sources to
            translate).
        inputs: token ids: a (B, T) tensor, one list of ids, or a list of lists of different
            lengths (padded here: on the left for a DecoderLM, on the right for a source).
        config: the settings (a `GenerationConfig`: max_new_tokens, temperature, top_k,
            top_p, num_beams, stop strings, ...); None: its defaults.
        attention_mask: (B, T), 1 = a real token, for a padded tensor of ``inputs``.
        tokenizer: for stop strings, the default <EOS> and ``texts`` (default: the tokenizer
            attached to the model, if any); no step chooses an id it does not define (a
            model's padding rows past ``tokenizer.file_vocab_size``).
        on_step: called after every step with the new token of each input (None for an
            input that finished at an earlier step); not called by beam search.
        **settings: GenerationConfig fields overriding ``config``.

    Returns:
        A `GenerationOutput`: ``sequences`` (B, L), the new ``tokens`` of each input, their
        ``finish_reasons`` ("eos", "stop_string", "length"), the decoded ``texts`` (with a
        tokenizer), beam ``scores``.

    Raises:
        ValueError: an unknown setting or one out of its range, ids outside the vocabulary,
            inputs longer than the model's ``max_len`` allows.

    Examples:
        >>> import torch
        >>> from glassformer import DecoderLM, ModelConfig
        >>> from glassformer.generation import generate
        >>> _ = torch.manual_seed(0)
        >>> model = DecoderLM(ModelConfig(vocab_size=20, d_model=16, n_layer=1, n_head=2))
        >>> out = generate(model, [[1, 5, 7], [1, 3]], max_new_tokens=4, temperature=0)
        >>> [len(t) for t in out.tokens], out.finish_reasons
        ([4, 4], ['length', 'length'])
    """
    job = GenerationJob(model, inputs, config, attention_mask, tokenizer, settings)
    with job.running():
        if job.config.num_beams > 1:
            return job.beam()
        for tokens in job.sample():
            if on_step is not None:
                on_step(job.step_view(tokens))
        return job.output()


def stream(
    model: GlassformerModel,
    inputs: Inputs,
    config: GenerationConfig | None = None,
    *,
    attention_mask: Tensor | None = None,
    tokenizer=None,
    **settings: Any,
) -> Iterator[list[int | None]]:
    """An iterator yielding, after every step, the new token of each input (None once an input
    has finished). Greedy or sampling only: beam search knows its result only at the end.
    Settings and inputs are checked here, before the first token is asked for."""
    job = GenerationJob(model, inputs, config, attention_mask, tokenizer, settings)
    if job.config.num_beams > 1:
        raise ValueError(
            f"num_beams={job.config.num_beams} cannot be streamed (beam search knows its "
            "result only at the end): allowed num_beams=1; use generate()"
        )
    return _stream(job)


def _stream(job: GenerationJob) -> Iterator[list[int | None]]:
    with job.running():
        for tokens in job.sample():
            yield job.step_view(tokens)


def generate_text(
    model: GlassformerModel,
    tokenizer,
    prompts: str | Sequence[str],
    config: GenerationConfig | None = None,
    *,
    add_bos: bool = True,
    **settings: Any,
) -> str | list[str]:
    """Text in, text out: one string per prompt (a single prompt gives a single string).

    Prompts are encoded as in training: <BOS> + ids for a DecoderLM (``add_bos``), ids + <EOS>
    for an EncoderDecoder's source. The output is the generated text only."""
    single = isinstance(prompts, str)
    ids = [encode_prompt(model, tokenizer, p, add_bos=add_bos) for p in _texts(prompts)]
    out = generate(model, ids, config, tokenizer=tokenizer, **settings)
    return out.texts[0] if single else out.texts


def stream_text(
    model: GlassformerModel,
    tokenizer,
    prompt: str,
    config: GenerationConfig | None = None,
    *,
    add_bos: bool = True,
    **settings: Any,
) -> Iterator[str]:
    """Yield the new text of one prompt piece by piece, as the tokens are produced.

    Text is decoded from all new tokens and only what is new is yielded; a piece ending in an
    unfinished UTF-8 character (byte-level BPE) is held back until the character completes.
    The pieces joined equal ``generate_text`` of the same settings and seed. Settings are
    checked here, before the first piece is asked for."""
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, got {type(prompt).__name__}")
    ids = encode_prompt(model, tokenizer, prompt, add_bos=add_bos)
    config = (GenerationConfig() if config is None else config).replace(**settings)
    steps = stream(model, [ids], config, tokenizer=tokenizer)
    return _text_pieces(steps, tokenizer, config.stop_strings)


def _text_pieces(steps, tokenizer, stops: tuple[str, ...]) -> Iterator[str]:
    tokens: list[int] = []
    shown = 0
    for (tok,) in steps:
        if tok is None:
            break
        tokens.append(tok)
        text = cut_at_stop(tokenizer.decode(tokens, skip_special=True), stops)
        if text.endswith("\ufffd"):
            continue  # an incomplete character: wait for its other bytes
        if len(text) > shown:
            yield text[shown:]
            shown = len(text)
    text = cut_at_stop(tokenizer.decode(tokens, skip_special=True), stops)
    if len(text) > shown:
        yield text[shown:]


def encode_prompt(model: GlassformerModel, tokenizer, text: str, *, add_bos: bool = True):
    """A prompt's ids as the model saw text in training (see ``generate_text``)."""
    if isinstance(model, EncoderDecoder):
        return tokenizer.encode(text, add_eos=True)
    return tokenizer.encode(text, add_bos=add_bos)


def _texts(prompts: str | Sequence[str]) -> list[str]:
    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts or not all(isinstance(p, str) for p in prompts):
        raise ValueError("prompts must be a string or a non-empty sequence of strings")
    return prompts
