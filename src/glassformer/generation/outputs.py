"""What ``generate()`` returns."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["GenerationOutput"]


@dataclass
class GenerationOutput:
    """The result of one ``generate()`` call on B inputs.

    sequences: (B, L) long. Decoder-only: the (left-padded) prompts, then the new tokens;
        encoder-decoder: ``decoder_start_id``, then the new tokens. A sequence that finished
        early is filled with ``pad_id`` to the common length.
    tokens: the new tokens of each input, up to and including the one that finished it.
    finish_reasons: per input, "eos", "stop_string" or "length" (max_new_tokens reached).
    texts: the decoded new tokens (special tokens skipped, cut just after a stop string),
        when a tokenizer is known; else None.
    prompt_length: the number of leading columns of ``sequences`` that are not generated.
    scores: beam search only, (B,): the returned sequence's log P / n^length_penalty.
    logits: with ``return_logits=True``, (B, n, N_V): the raw logits each step chose from
        (-inf at the ids the tokenizer does not define, a model's padding rows).
    """

    sequences: Tensor
    tokens: list[list[int]]
    finish_reasons: list[str]
    texts: list[str] | None
    prompt_length: int
    scores: Tensor | None = None
    logits: Tensor | None = None
