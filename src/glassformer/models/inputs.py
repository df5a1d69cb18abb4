"""The input to the first block (notes, "Final input to the Transformer Block"):

    x_n^(0) = W_e[:, x[n]] + W_p[:, n]     (+ W_s[:, segment[n]] for BERT's token types)

followed, where the architecture has one, by a norm (BERT, BART) and dropout. With rotary
positions nothing is added here; the (cos, sin) tables are handed to every attention layer.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..nn import HookPoint, TokenEmbedding, make_norm, make_positional_encoding
from .config import ModelConfig

__all__ = ["InputEmbedding", "check_length", "ids_length", "key_mask", "positions_from_mask"]


class InputEmbedding:
    """The parts of x^(0), on the model (or the side of an encoder-decoder) that mixes this
    class in, under TransformerLens's names: ``embed`` the token embedding W_e, ``pos_embed``
    the positional encoding (W_p when learned), ``token_type_embed`` BERT's segment embedding
    W_s, ``ln_embed`` the embedding norm (BERT, BART), ``embed_dropout``.

    Hook points: ``hook_embed`` (B, T, C) the token embeddings W_e[:, x[n]] (· √C),
    ``hook_pos_embed`` (B, T, C) the positional vectors r_n added to them (sinusoidal or
    learned), ``hook_token_type_embed`` (B, T, C) the segment embeddings; ``ln_embed`` has its
    ``hook_normalized``."""

    def add_input_embedding(
        self, config: ModelConfig, vocab_size: int, token: TokenEmbedding | None = None
    ) -> None:
        """Build the parts above (``token``: an embedding shared with another side)."""
        if token is None:
            token = TokenEmbedding(vocab_size, config.d_model, scale=config.embed_scale)
        self.embed = token
        self.position_offset = config.position_offset
        self.pos_embed = make_positional_encoding(
            config.positional,
            config.d_model,
            config.max_len + self.position_offset,
            n_head=config.n_head,
            base=config.rope_base,
            layout=config.positional_layout,
        )
        self.token_type_embed = (
            nn.Embedding(config.type_vocab_size, config.d_model) if config.type_vocab_size else None
        )
        self.ln_embed = (
            make_norm(config.norm, config.d_model, config.norm_eps, config.bias)
            if config.embed_norm
            else None
        )
        self.embed_dropout = nn.Dropout(config.resolved_embed_dropout)
        self.hook_embed = HookPoint()
        if config.positional in ("sinusoidal", "learned"):  # the additive encodings
            self.hook_pos_embed = HookPoint()
        if self.token_type_embed is not None:
            self.hook_token_type_embed = HookPoint()

    def embed_input(
        self,
        ids: Tensor,
        positions: Tensor,
        token_type_ids: Tensor | None = None,
        token_mask: Tensor | None = None,
        length: int | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor] | None]:
        """ids (B, T), positions (T,) or (B, T) -> (x^(0) (B, T, C), rotary tables or None).
        ``length``: every position is below it; rotary angles past max_len are computed for a
        model that may run past max_len (DecoderLM.length_limit)."""
        positions = positions + self.position_offset
        x = self.hook_embed(self.embed(ids))  # (B, T, C): W_e[:, x[n]]
        r = self.pos_embed.vectors(positions)  # (T, C) or (B, T, C): r_n, None for rotary
        if r is not None:
            x = x + self.hook_pos_embed(r.to(x.dtype).expand_as(x))  # x_n + r_n
        if self.token_type_embed is not None:
            if token_type_ids is None:  # every token of type 0: one row, broadcast
                s = self.token_type_embed.weight[0].expand_as(x)
            else:
                s = self.token_type_embed(token_type_ids)
            x = x + self.hook_token_type_embed(s)  # + W_s[:, segment[n]]
        if self.ln_embed is not None:
            x = self.ln_embed(x, token_mask)
        if self.training:  # dropout is the identity in eval mode
            x = self.embed_dropout(x)
        end = None if length is None else length + self.position_offset
        return x, self.pos_embed.rotary(positions, end)


def positions_from_mask(
    attention_mask: Tensor | None, t: int, past: int, device, max_len: int | None
) -> Tensor:
    """Positions of the T newest tokens, (T,) or (B, T), counted over the real tokens of
    ``attention_mask`` (B, past + T), 1 = real: the k-th real token of a row is at position
    k - 1, wherever the padding stands, so that a left-padded input gets the positions of the
    unpadded one (in every family: decoder prompts, encoder inputs, an encoder-decoder's
    source and target). A padded position continues from the real token before it (the
    first of a run of padding at that token's position + 1), so right padding keeps the
    column index everywhere, as Hugging Face's BERT and BART count. Every position is at most
    its column index. ``max_len`` None: no limit."""
    check_length(t, past, max_len)
    if attention_mask is None:
        return torch.arange(past, past + t, device=device)
    real = attention_mask.bool()
    column = torch.arange(real.shape[-1], device=real.device)  # (S,)
    counted = real.long().cumsum(-1) - 1  # (B, S): index among the real tokens
    last_real = torch.where(real, column, -1).cummax(-1).values  # (B, S), -1 before the first
    pos = counted + (column - last_real)  # real: counted; padding: steps past the last real
    return pos[:, -t:]  # (B, T)


def check_length(t: int, past: int, max_len: int | None) -> None:
    """Refuse T new positions after ``past`` cached ones when they would pass max_len (None:
    no limit)."""
    if max_len is not None and past + t > max_len:
        raise ValueError(
            f"the input needs {past + t} positions ({past} cached + {t} new) but the model's "
            f"max_len is {max_len}; shorten the input or use a model with a larger max_len"
        )


def ids_length(ids: Tensor, name: str = "input_ids") -> int:
    """T of the token ids ``ids`` (B, T); a ValueError naming ``name`` for another rank."""
    if not isinstance(ids, Tensor):
        raise ValueError(f"{name} must be a tensor of token ids (B, T); got {type(ids).__name__}")
    if ids.dim() != 2:
        hint = " (one sequence: ids[None] adds the batch)" if ids.dim() == 1 else ""
        raise ValueError(
            f"{name} must be token ids of shape (B, T); got shape {tuple(ids.shape)}{hint}"
        )
    return ids.shape[1]


def key_mask(
    attention_mask: Tensor | None,
    shape: tuple[int, int] | None = None,
    name: str = "attention_mask",
    covers: str = "",
) -> tuple[Tensor | None, Tensor | None]:
    """Hugging Face's attention_mask (B, S), 1 = real token, 0 = padding ->
    (attention key mask (B, 1, 1, S), real-token mask (B, S)), both bool; (None, None) if None.
    ``shape``: the (B, S) it must have, ``covers`` what S counts (for the message)."""
    if attention_mask is None:
        return None, None
    if attention_mask.dim() != 2 or (shape is not None and attention_mask.shape != shape):
        want = "(B, S)" if shape is None else f"(B, S) = {shape}{covers}"
        raise ValueError(
            f"{name} must be {want} with 1 = real token, 0 = padding; got shape "
            f"{tuple(attention_mask.shape)}"
        )
    real = attention_mask.bool()
    return real[:, None, None, :], real
