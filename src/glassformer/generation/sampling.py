"""Greedy decoding and sampling, token by token over a decoding session (DInference).

DInference (Phuong & Hutter, "Formal Algorithms for Transformers" (2022), Algorithm 14):

    for i = 1, 2, ..., ℓ_gen:
        P ← DTransformer(x | θ)               next-token distributions
        p ← P[:, ℓ + i - 1]                   the one after the last token
        sample a token y from q ∝ p^{1/τ}
        x ← [x, y]

Here the DTransformer call of step i feeds only the newest token (the KV cache holds the rest,
see ``decoding``), the draw is made by ``logits.choose_next`` (τ = 0: argmax; top-k / top-p
filters) with the caller's torch.Generator, and the loop ends early once every sequence is
finished (``stopping``). The same loop serves the decoder of an encoder-decoder (the source is
encoded once and each step extends the target).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from .config import GenerationConfig
from .decoding import Session
from .logits import choose_next
from .stopping import StopState

__all__ = ["sample_steps"]


def sample_steps(
    session: Session,
    config: GenerationConfig,
    stop: StopState,
    generator: torch.Generator | None = None,
    logits_log: list[Tensor] | None = None,
) -> Iterator[Tensor]:
    """Yield the next tokens (B,) of every step; finished rows get ``pad_id``.

    ``logits_log``, when given, receives the raw logits (B, N_V) each step chose from (as the
    session gives them: -inf at ids the tokenizer does not define, ``decoding.DefinedIds``)."""
    temperature, top_k, top_p = config.temperature, config.top_k, config.top_p
    last = config.max_new_tokens - 1
    tokens: Tensor | None = None
    for i in range(config.max_new_tokens):
        with torch.inference_mode():  # one context per step: prefill or step, then the draw
            logits = session.prefill() if tokens is None else session.step(tokens)
            if logits_log is not None:
                logits_log.append(logits.float())
            tokens = stop.update(choose_next(logits, temperature, top_k, top_p, generator))
        yield tokens
        if stop.all_finished or i == last:
            break
    if not stop.all_finished:
        stop.finish_length()
