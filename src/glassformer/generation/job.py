"""One generate() call: validated settings, padded inputs, then the decoding and its result.

Everything a user can get wrong (settings, ids, padding, lengths against max_len) is checked
when the job is made, before the model runs, so that a streaming caller fails before printing
anything. The session (and for an EncoderDecoder the encoder pass) starts on the first step,
inside the caller's eval mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor

from ..fast import fast_paths, layout
from ..models import DecoderLM, EncoderDecoder
from .beam import beam_search
from .config import GenerationConfig
from .decoding import DecoderSession, DefinedIds, Seq2SeqSession, Session, eval_mode
from .inputs import check_ids, pad_prompts
from .outputs import GenerationOutput
from .sampling import sample_steps
from .stopping import StopState, cut_at_stop

__all__ = ["GenerationJob", "max_new_tokens_allowed"]


def max_new_tokens_allowed(model: DecoderLM | EncoderDecoder, prompt_length: int) -> int | None:
    """The most new tokens one call can make after a prompt (an EncoderDecoder: a source) of
    ``prompt_length`` tokens, before the model's ``max_len`` positions run out. A DecoderLM
    feeds back every new token but the last: max_len - prompt_length + 1 (< 1 when the
    prompt alone is longer than max_len); None (no limit) for one that may run past max_len
    (``DecoderLM.length_limit``: sliding windows in every layer, rotary or no positions). An
    EncoderDecoder's decoder holds its start token and every new token but the last: max_len,
    whatever the source's length."""
    max_len = model.config.max_len
    if isinstance(model, EncoderDecoder):
        return max_len
    return None if model.length_limit() is None else max_len - prompt_length + 1


class GenerationJob:
    """Settings, inputs and state of one generation (see ``api.generate``)."""

    def __init__(
        self,
        model: DecoderLM | EncoderDecoder,
        inputs: Any,
        config: GenerationConfig | None,
        attention_mask: Tensor | None,
        tokenizer: Any,
        settings: dict[str, Any],
    ) -> None:
        if not isinstance(model, DecoderLM | EncoderDecoder):
            raise ValueError(
                f"generate() needs a DecoderLM or an EncoderDecoder, got {type(model).__name__}; "
                "for classifiers and masked LMs use glassformer.generation.classify / fill_mask"
            )
        config = GenerationConfig() if config is None else config
        self.config = config.replace(**settings)  # validated again, with the overrides
        self.model = model
        self.tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
        self.seq2seq = isinstance(model, EncoderDecoder)
        mc = model.config
        self.pad_id = mc.pad_id if self.config.pad_id is None else self.config.pad_id
        if self.config.eos_id is not None:
            self.eos_ids: tuple[int, ...] = self.config.eos_id
        else:
            self.eos_ids = (self.tokenizer.eos_id,) if self.tokenizer is not None else ()
        device = next(model.parameters()).device
        ids, mask = pad_prompts(inputs, attention_mask, self.pad_id, left=not self.seq2seq)
        self.ids = ids.to(device)
        self.mask = None if mask is None else mask.to(device)
        check_ids(self.ids, mc.vocab_size, "inputs")
        self.batch, self.prompt_length = ids.shape
        self._check_length()
        if not self.seq2seq and mask is not None and not bool(mask[:, -1].all()):
            raise ValueError(
                "attention_mask: a DecoderLM's prompts must be left-padded (padding first, the "
                "last column real in every row), so each next token lands in the same column"
            )
        self.stop = StopState(
            self.batch,
            self.eos_ids,
            self.pad_id,
            device,
            stop_strings=self.config.stop_strings,
            tokenizer=self.tokenizer,
        )
        self.steps: list[Tensor] = []
        self.logits: list[Tensor] | None = [] if self.config.return_logits else None
        self._finished_before = [False] * self.batch

    def _check_length(self) -> None:
        max_len, m = self.model.config.max_len, self.config.max_new_tokens
        allowed = max_new_tokens_allowed(self.model, self.prompt_length)
        if allowed is None:  # sliding windows: no limit
            return
        if self.prompt_length > max_len:
            what = "source" if self.seq2seq else "prompt"
            raise ValueError(
                f"inputs: the {what} has {self.prompt_length} tokens but the model's "
                f"max_len is {max_len}; shorten it"
            )
        if m > allowed:
            need = m if self.seq2seq else self.prompt_length + m - 1
            what = (
                f"the decoder start token + {m - 1} fed back"
                if self.seq2seq
                else f"a prompt of {self.prompt_length} + {m - 1} tokens fed back"
            )
            raise ValueError(
                f"max_new_tokens={m} is not allowed: generating it needs {need} positions "
                f"({what}) but the model's max_len is {max_len}; allowed max_new_tokens <= "
                f"{allowed} (only a decoder with a sliding-window graph in every layer and "
                "rotary or no positions runs past max_len)"
            )

    @contextmanager
    def running(self) -> Iterator[None]:
        """The model as decoding wants it: eval mode (no dropout), its CPU fast paths
        (glassformer.fast) and with them input-major weights (glassformer.fast.layout); all
        undone on exit."""
        c = self.config
        with fast_paths(self.model), eval_mode(self.model):
            relayout = layout.pays(self.model, c.use_cache, c.max_new_tokens)
            with layout.input_major_weights(self.model, relayout):
                yield

    def _session(self) -> Session:
        make = Seq2SeqSession if self.seq2seq else DecoderSession
        with torch.inference_mode():
            session = make(
                self.model,
                self.ids,
                self.mask,
                self.config.max_new_tokens,
                use_cache=self.config.use_cache,
            )
        return session if self.tokenizer is None else DefinedIds(session, self.tokenizer)

    # Greedy and sampling -----------------------------------------------------------------------
    def sample(self) -> Iterator[Tensor]:
        """Yield the next tokens (B,) of every step (see ``sampling.sample_steps``)."""
        generator = None
        if self.config.do_sample:
            generator = torch.Generator(device=self.ids.device)
            if self.config.seed is None:
                generator.seed()  # fresh entropy, never the global RNG
            else:
                generator.manual_seed(self.config.seed)
        steps = sample_steps(self._session(), self.config, self.stop, generator, self.logits)
        for tokens in steps:
            self.steps.append(tokens)
            yield tokens

    def step_view(self, tokens: Tensor) -> list[int | None]:
        """A step's tokens as ints, None for the inputs that had finished before it."""
        out: list[int | None] = tokens.tolist()
        for row, done in enumerate(self._finished_before):
            if done:
                out[row] = None
        if self.stop.any_finished:
            self._finished_before = self.stop.finished.tolist()
        return out

    def output(self) -> GenerationOutput:
        """The result, once ``sample()`` is exhausted."""
        new = torch.stack(self.steps, dim=1)  # (B, n)
        tokens = [seq[:n] for seq, n in zip(new.tolist(), self.stop.lengths, strict=True)]
        logits = None if self.logits is None else torch.stack(self.logits, dim=1)  # (B, n, N_V)
        return self._result(new, tokens, list(self.stop.reasons), None, logits)

    # Beam search -------------------------------------------------------------------------------
    def beam(self) -> GenerationOutput:
        res = beam_search(
            self._session(), self.config, self.batch, self.eos_ids, tokenizer=self.tokenizer
        )
        width = max(len(t) for t in res.tokens)
        new = torch.full((self.batch, width), self.pad_id, dtype=torch.long)
        for row, seq in enumerate(res.tokens):
            new[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        return self._result(new.to(self.ids.device), res.tokens, res.reasons, res.scores)

    def _result(self, new, tokens, reasons, scores, logits=None) -> GenerationOutput:
        if self.seq2seq:
            head = torch.full((self.batch, 1), self.model.config.decoder_start_id)
            head = head.to(new.device)
        else:
            head = self.ids
        texts = None
        if self.tokenizer is not None:
            stops = self.config.stop_strings
            texts = [
                cut_at_stop(self.tokenizer.decode(t, skip_special=True), stops) for t in tokens
            ]
        return GenerationOutput(
            sequences=torch.cat([head, new], dim=1),
            tokens=tokens,
            finish_reasons=reasons,
            texts=texts,
            prompt_length=head.shape[1],
            scores=scores,
            logits=logits,
        )
