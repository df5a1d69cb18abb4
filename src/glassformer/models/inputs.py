"""The input to the first block (notes, "Final input to the Transformer Block"):

    x_n^(0) = W_e[:, x[n]] + W_p[:, n]     (+ W_s[:, segment[n]] for BERT's token types)

followed, where the architecture has one, by a norm (BERT, BART) and dropout. With rotary
positions nothing is added here; the (cos, sin) tables are handed to every attention layer.

A family's ``__init__`` lists the parts under TransformerLens's names, each built by a
function here: ``embed`` the token embedding W_e (`token_embedding`), ``pos_embed`` the
positional encoding (W_p when learned; `positional_encoding`), ``token_type_embed`` BERT's
segment embedding W_s (`segment_embedding`, None without token types), ``ln_embed`` the
embedding norm (`embedding_norm`, BERT and BART), ``embed_dropout``, and the hook points:
``hook_embed`` (B, T, C) the token embeddings W_e[:, x[n]] (· √C), ``hook_pos_embed``
(B, T, C) the positional vectors r_n added to them (sinusoidal or learned only:
`adds_positions`), ``hook_token_type_embed`` (B, T, C) the segment embeddings (with token
types only); a hook point a model does not have is not an attribute.
`embed_input` computes x^(0) from them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from ..nn import PositionalEncoding, TokenEmbedding, make_norm, make_positional_encoding
from .config import ModelConfig

__all__ = [
    "InputEmbedding",
    "adds_positions",
    "check_length",
    "embed_input",
    "embedding_norm",
    "ids_length",
    "key_mask",
    "positional_encoding",
    "positions_from_mask",
    "segment_embedding",
    "token_embedding",
]


@runtime_checkable
class InputEmbedding(Protocol):
    """What holds the parts of x^(0) (the module docstring lists them): a one-stack model, or
    an encoder-decoder's ``encoder`` or ``decoder``."""

    embed: TokenEmbedding
    pos_embed: PositionalEncoding
    position_offset: int

    def embed_input(self, ids: Tensor, positions: Tensor, *args, **kwargs) -> tuple: ...


def token_embedding(config: ModelConfig, vocab_size: int) -> TokenEmbedding:
    """W_e (``vocab_size``, C), scaled by √C when ``config.embed_scale``."""
    return TokenEmbedding(vocab_size, config.d_model, scale=config.embed_scale)


def positional_encoding(config: ModelConfig) -> PositionalEncoding:
    """The positional encoding ``config.positional`` names, for max_len positions after the
    first ``config.position_offset`` rows (BART's learned table starts at row 2)."""
    return make_positional_encoding(
        config.positional,
        config.d_model,
        config.max_len + config.position_offset,
        n_head=config.n_head,
        base=config.rope_base,
        layout=config.positional_layout,
    )


def segment_embedding(config: ModelConfig) -> nn.Embedding | None:
    """BERT's W_s (``type_vocab_size``, C), or None when the config has no token types."""
    if not config.type_vocab_size:
        return None
    return nn.Embedding(config.type_vocab_size, config.d_model)


def embedding_norm(config: ModelConfig) -> nn.Module | None:
    """The norm of x^(0) (``config.embed_norm``: BERT, BART), or None."""
    if not config.embed_norm:
        return None
    return make_norm(config.norm, config.d_model, config.norm_eps, config.bias)


def adds_positions(config: ModelConfig) -> bool:
    """Is the positional encoding added to the token embeddings (sinusoidal, learned), so that
    the model has ``hook_pos_embed``? (Rotary positions rotate q and k instead; none: none.)"""
    return config.positional in ("sinusoidal", "learned")


def embed_input(
    self: InputEmbedding,
    ids: Tensor,
    positions: Tensor,
    token_type_ids: Tensor | None = None,
    token_mask: Tensor | None = None,
    length: int | None = None,
) -> tuple[Tensor, tuple[Tensor, Tensor] | None]:
    """ids (B, T), positions (T,) or (B, T) -> (x^(0) (B, T, C), rotary tables or None),
    from the parts of ``self`` (a family binds this function as its method ``embed_input``).
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
