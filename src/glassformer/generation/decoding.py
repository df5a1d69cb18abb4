"""Incremental decoding sessions: feed the prompt once, then one new token per step.

The notes' observation that makes a KV cache exact: with a causal mask, X^(n) = X^(n+1)_{1:n},
so the keys and values of earlier positions never change once computed. A session keeps them
(``model.new_cache``, storage allocated once for the whole generation) and each step feeds only
the newest token, at its own position. A layer whose attention graph reaches back at most w - 1
positions (a causal sliding window of w, glassformer.graphs) keeps only the latest w (a rolling
cache), so its memory stays bounded however long the generation runs. Without the cache
(``use_cache=False``) every step runs the whole prefix again, the notes' "N calls to the
transformer", each over a longer input.

* DecoderSession (DecoderLM): prompts are left-padded, (B, T) with attention_mask (B, T), so
  that every row's next token sits in the same column. Positions count real tokens only, so a
  padded prompt sees the positions it would see alone (learned, sinusoidal and rotary alike).
* Seq2SeqSession (EncoderDecoder): the source is encoded once; the decoder starts from
  ``decoder_start_id``; cross-attention keys/values of the source are computed at the first
  step and kept in the cache.

``expand(n)`` repeats every row n times (the beams of a prompt) and ``reorder(index)`` picks
the rows that continue (beam search); both keep the rows of one prompt together.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..models import DecoderLM, EncoderDecoder
from ..models.base import eval_mode
from ..models.tokens import drop_undefined_ids

__all__ = ["DecoderSession", "DefinedIds", "Seq2SeqSession", "Session", "eval_mode"]


class Session:
    """Common interface: ``prefill() -> logits (B, N_V)``,
    ``step(tokens (B,)) -> logits (B, N_V)``."""

    def prefill(self) -> Tensor:
        raise NotImplementedError

    def step(self, tokens: Tensor) -> Tensor:
        raise NotImplementedError

    def expand(self, n: int) -> None:
        raise NotImplementedError

    def reorder(self, index: Tensor) -> None:
        raise NotImplementedError


class DefinedIds(Session):
    """A session whose logits are -inf at the ids ``tokenizer`` does not define (a model's
    padding rows, ``models.tokens.drop_undefined_ids``): no step chooses a token the
    tokenizer cannot spell."""

    def __init__(self, session: Session, tokenizer) -> None:
        self.session, self.tokenizer = session, tokenizer

    def prefill(self) -> Tensor:
        return drop_undefined_ids(self.session.prefill(), self.tokenizer)

    def step(self, tokens: Tensor) -> Tensor:
        return drop_undefined_ids(self.session.step(tokens), self.tokenizer)

    def expand(self, n: int) -> None:
        self.session.expand(n)

    def reorder(self, index: Tensor) -> None:
        self.session.reorder(index)


class DecoderSession(Session):
    """A DecoderLM continuing left-padded prompts ``input_ids`` (B, T), mask (B, T) or None."""

    def __init__(
        self,
        model: DecoderLM,
        input_ids: Tensor,
        attention_mask: Tensor | None,
        max_new_tokens: int,
        *,
        use_cache: bool = True,
    ) -> None:
        self.model = model
        b, t = input_ids.shape
        slots = t + max_new_tokens  # every column the generation can fill
        self.length = t  # columns filled so far
        device = input_ids.device
        self.ids = torch.empty(b, slots, dtype=torch.long, device=device)  # (B, T + M)
        self.ids[:, :t] = input_ids
        self.columns = torch.arange(slots, device=device)  # positions of unpadded rows
        self.mask = None  # (B, T + M), only when some prompt is padded
        self.row_positions: Tensor | None = None  # (B, T + M) position of each column
        if attention_mask is not None and not bool(attention_mask.all()):
            self.mask = torch.ones(b, slots, dtype=torch.long, device=device)
            self.mask[:, :t] = attention_mask
            n_pad = t - attention_mask.long().sum(dim=1, keepdim=True)  # (B, 1)
            self.row_positions = self.columns - n_pad  # new tokens follow the real ones
        # the last token is never fed; windowed layers keep their window only
        self.cache = model.new_cache(slots - 1, rolling=True) if use_cache else None

    def prefill(self) -> Tensor:
        t = self.length
        return self._forward(self.ids[:, :t], None)

    def step(self, tokens: Tensor) -> Tensor:
        t = self.length
        self.ids[:, t] = tokens
        self.length = t + 1
        if self.cache is None:  # recompute the whole prefix
            return self._forward(self.ids[:, : t + 1], None)
        if self.row_positions is None:
            positions = self.columns[t : t + 1]  # (1,)
        else:
            positions = self.row_positions[:, t : t + 1]  # (B, 1)
        return self._forward(self.ids[:, t : t + 1], positions)

    def _forward(self, ids: Tensor, positions: Tensor | None) -> Tensor:
        mask = None if self.mask is None else self.mask[:, : self.length]
        logits = self.model(ids, mask, positions=positions, cache=self.cache).logits
        return logits[:, -1]  # (B, N_V): the distribution of the next token

    def expand(self, n: int) -> None:
        index = torch.arange(self.ids.shape[0], device=self.ids.device).repeat_interleave(n)
        if self.mask is not None:
            self.mask = self.mask.index_select(0, index)
            self.row_positions = self.row_positions.index_select(0, index)
        self.reorder(index)

    def reorder(self, index: Tensor) -> None:
        # rows of one prompt share its padding and positions: only tokens and keys/values move
        self.ids = self.ids.index_select(0, index)
        if self.cache is not None:
            for c in self.cache.self_attn:
                c.reorder(index)


class Seq2SeqSession(Session):
    """An EncoderDecoder translating ``input_ids`` (B, S) (right-padded, mask (B, S) or None)."""

    def __init__(
        self,
        model: EncoderDecoder,
        input_ids: Tensor,
        attention_mask: Tensor | None,
        max_new_tokens: int,
        *,
        use_cache: bool = True,
    ) -> None:
        self.model = model
        b = input_ids.shape[0]
        self.src_mask = attention_mask
        self.memory = model.encode(input_ids, attention_mask)  # (B, S, C), once
        start = model.config.decoder_start_id
        slots = 1 + max_new_tokens
        self.ids = torch.full((b, slots), start, dtype=torch.long, device=input_ids.device)
        self.length = 1
        self.columns = torch.arange(slots, device=input_ids.device)
        self.cache = model.new_cache(max_new_tokens, rolling=True) if use_cache else None

    def prefill(self) -> Tensor:
        return self._forward(self.ids[:, :1], self.columns[:1])

    def step(self, tokens: Tensor) -> Tensor:
        t = self.length
        self.ids[:, t] = tokens
        self.length = t + 1
        if self.cache is None:
            return self._forward(self.ids[:, : t + 1], self.columns[: t + 1])
        return self._forward(self.ids[:, t : t + 1], self.columns[t : t + 1])

    def _forward(self, ids: Tensor, positions: Tensor) -> Tensor:
        out = self.model.decode(
            ids, self.memory, self.src_mask, cache=self.cache, positions=positions
        )
        return out.logits[:, -1]  # (B, V_tgt)

    def expand(self, n: int) -> None:
        index = torch.arange(self.ids.shape[0], device=self.ids.device).repeat_interleave(n)
        self.memory = self.memory.index_select(0, index)
        if self.src_mask is not None:
            self.src_mask = self.src_mask.index_select(0, index)
        self.ids = self.ids.index_select(0, index)
        if self.cache is not None:
            self.cache.reorder(index)  # self- and cross-attention

    def reorder(self, index: Tensor) -> None:
        # the beams of one prompt share its source: memory and cross-attention K/V stay
        self.ids = self.ids.index_select(0, index)
        if self.cache is not None:
            for c in self.cache.self_attn:
                c.reorder(index)
