"""EncoderDecoder: the Vaswani et al. transformer, Algorithm 8 (EDTransformer) of
Phuong & Hutter, "Formal Algorithms for Transformers" (2022).

    Z ← encode(x):  W_e[:, x] + W_p, then L_enc bidirectional blocks   (source padding masked)
    X ← decode(z, Z): W_e[:, z] + W_p, then L_dec blocks of
        causal self-attention, cross-attention to Z (Eq. 5), MLP
    P = softmax(W_u X)      distribution of the next target token

``encode()`` and ``decode()`` are separate calls so generation encodes the source once.
Trained with EDTraining (teacher forcing): decoder_input_ids = <BOS> + target, labels =
target + <EOS>; if only labels are given they are shifted right with ``decoder_start_id``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..nn import DecoderCache, HookPoint, TokenEmbedding, run_blocks
from ..nn.feedforward import activation_fn
from ..nn.transformer import new_decoder_cache
from . import heads, inputs
from .base import GlassformerModel
from .config import ModelConfig
from .inputs import check_length, ids_length, key_mask, positions_from_mask
from .outputs import IGNORE_INDEX, ModelOutput, lm_loss
from .stacks import decoder_stack, encoder_stack

__all__ = ["EncoderDecoder", "Stack", "shift_right"]


class Stack(nn.Module):
    """One side of an encoder-decoder, its parts only (``EncoderDecoder`` runs them):
    ``embed`` (``token``, the other side's, when given), ``pos_embed``, ``token_type_embed``,
    ``ln_embed`` (models/inputs.py), then ``blocks`` and ``ln_final``: ``stack``, the
    encoder's (models/stacks.encoder_stack) or the decoder's (decoder_stack)."""

    checkpointing = False  # see GlassformerModel.enable_checkpointing
    embed_input = inputs.embed_input  # ids, positions -> x^(0), rotary tables

    def __init__(
        self,
        config: ModelConfig,
        vocab_size: int,
        stack: tuple[nn.ModuleList, nn.Module | None],
        token: TokenEmbedding | None = None,
    ) -> None:
        super().__init__()  # the embedding first: the hook points in the order of a pass
        self.embed = inputs.token_embedding(config, vocab_size) if token is None else token
        self.position_offset = config.position_offset  # W_p's first row (BART: 2)
        self.pos_embed = inputs.positional_encoding(config)  # W_p, sinusoids or rotary
        self.token_type_embed = inputs.segment_embedding(config)  # W_s or None
        self.ln_embed = inputs.embedding_norm(config)  # the norm of x^(0) or None
        self.embed_dropout = nn.Dropout(config.resolved_embed_dropout)
        self.hook_embed = HookPoint()  # (B, T, C): W_e[:, x[n]]
        if inputs.adds_positions(config):  # sinusoidal or learned: r_n added to x_n
            self.hook_pos_embed = HookPoint()
        if self.token_type_embed is not None:
            self.hook_token_type_embed = HookPoint()
        self.blocks, self.ln_final = stack


class EncoderDecoder(GlassformerModel):
    """A sequence-to-sequence transformer, Vaswani et al.'s: the family "encoder-decoder".

    An encoder reads the source x into the memory Z; a decoder reads the target z, attending
    causally to itself and, by cross-attention (the notes' Eq. 5), to Z; the unembedding gives
    the distribution of the next target token. This is Algorithm 8 (EDTransformer) of Phuong &
    Hutter's paper "Formal Algorithms for Transformers". ``encode()`` and ``decode()`` are
    separate calls, so that generation encodes the source once; ``forward`` runs both stacks.

    Its parts, under TransformerLens's names (an attribute path is a hook point's name and a
    weight's name in a checkpoint):

    - ``encoder`` (a `Stack`): ``embed`` (W_e), ``pos_embed``, ``blocks`` (``n_layer``
      `EncoderBlock`s: ``ln1``, ``attn``, ``ln2``, ``mlp``), ``ln_final``;
    - ``decoder`` (a `Stack`): ``embed`` (the encoder's when ``share_embeddings``),
      ``pos_embed``, ``blocks`` (``n_decoder_layer`` `DecoderBlock`s: ``ln1``, ``attn``,
      ``ln2``, ``cross_attn``, ``ln3``, ``mlp``), ``ln_final``;
    - ``unembed``: W_u, tied to the decoder's W_e (``tie_embeddings``).

    Args:
        config: the hyper-parameters; ``config.family`` must be "encoder-decoder".

    Raises:
        ValueError: the config is of another family.

    Examples:
        >>> import torch
        >>> from glassformer import EncoderDecoder, ModelConfig
        >>> _ = torch.manual_seed(0)
        >>> config = ModelConfig(family="encoder-decoder", vocab_size=40, d_model=32,
        ...                      n_layer=2, n_head=4)
        >>> model = EncoderDecoder(config)
        >>> source, target = torch.randint(2, 40, (2, 7)), torch.randint(2, 40, (2, 5))
        >>> out = model(source, labels=target)  # decoder inputs: target shifted right
        >>> out.logits.shape, out.encoder_hidden_states.shape
        (torch.Size([2, 5, 40]), torch.Size([2, 7, 32]))
    """

    family = "encoder-decoder"
    lm_logits = heads.lm_logits  # h (B, T, C) -> logits (B, T, V_tgt)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.encoder = Stack(config, config.vocab_size, encoder_stack(config))
        shared = self.encoder.embed if config.share_embeddings else None
        target_vocab = config.resolved_tgt_vocab_size
        self.decoder = Stack(
            config, target_vocab, decoder_stack(config, cross_attention=True), token=shared
        )
        self.transform, self.transform_norm = heads.mlm_transform(config)  # BERT's, or None
        if self.transform is not None:
            self.transform_activation = activation_fn(config.activation)  # a
            self.hook_transform = HookPoint()  # (B, T, C): a(W h + b)
        self.unembed = heads.unembedding(config, target_vocab, tie_to=self.decoder.embed)  # W_u
        self.hook_logits = HookPoint()
        self.post_init()

    def new_cache(self, max_len: int | None = None, *, rolling: bool = False) -> DecoderCache:
        """An empty KV cache for ``max_len`` target positions (default: the model's).
        ``rolling``: the decoder layers whose self-attention graph reaches back at most w - 1
        positions keep the latest w only (nn.transformer.new_decoder_cache)."""
        max_len = self.config.max_len if max_len is None else max_len
        return new_decoder_cache(self.decoder.blocks, max_len, rolling=rolling)

    def encode(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Source ids (B, S) -> memory Z (B, S, C); positions count over the real tokens of
        ``attention_mask`` (B, S), so a left-padded source gives the unpadded memory."""
        # Z ← Block_l(Z) for l = 1..L_enc, then the final norm: (B, S, C)
        return run_blocks(**self.encoder_pass(input_ids, attention_mask))

    def encoder_pass(self, input_ids: Tensor, attention_mask: Tensor | None) -> dict[str, Any]:
        """The source's x^(0) and masks: the arguments of the encoder's ``run_blocks``."""
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))
        positions = positions_from_mask(attention_mask, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.encoder.embed_input(input_ids, positions, token_mask=real)
        return dict(
            blocks=self.encoder.blocks,
            x=x,
            mask=mask,
            token_mask=real,
            rope=rope,
            ln_final=self.encoder.ln_final,
            checkpointing=self.encoder.checkpointing,
            packing=self.packing(mask, real),
        )

    def decode(
        self,
        decoder_input_ids: Tensor,
        memory: Tensor,
        attention_mask: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        *,
        cache: DecoderCache | None = None,
        positions: Tensor | None = None,
    ) -> ModelOutput:
        """Target ids (B, T) attending to memory (B, S, C) -> logits (B, T, V_tgt).

        attention_mask: the source's (B, S); decoder_attention_mask: the target's (B, T_all),
        covering cached positions too."""
        # X ← Block_l(X, Z) for l = 1..L_dec, then the final norm: (B, T, C)
        h = run_blocks(
            **self.decoder_pass(
                decoder_input_ids, memory, attention_mask, decoder_attention_mask, cache, positions
            )
        )
        logits = self.lm_logits(h)  # (B, T, V_tgt)
        return ModelOutput(logits=logits, hidden_states=h, encoder_hidden_states=memory)

    def decoder_pass(
        self,
        decoder_input_ids: Tensor,
        memory: Tensor,
        attention_mask: Tensor | None,
        decoder_attention_mask: Tensor | None,
        cache: DecoderCache | None = None,
        positions: Tensor | None = None,
    ) -> dict[str, Any]:
        """The target's x^(0), masks and memory: the arguments of the decoder's
        ``run_blocks`` (``decode`` says what each is)."""
        past = 0 if cache is None else cache.length
        t = ids_length(decoder_input_ids, "decoder_input_ids")
        memory_mask, _ = key_mask(attention_mask, tuple(memory.shape[:2]))
        covers = f" (S = {past} cached + {t} new positions)" if past else ""
        shape = (decoder_input_ids.shape[0], past + t)
        mask, real = key_mask(decoder_attention_mask, shape, "decoder_attention_mask", covers)
        token_mask = None if real is None else real[:, -t:]
        if positions is None:
            positions = positions_from_mask(
                decoder_attention_mask, t, past, decoder_input_ids.device, self.config.max_len
            )
        else:
            check_length(t, past, self.config.max_len)
        x, rope = self.decoder.embed_input(decoder_input_ids, positions, token_mask=token_mask)
        return dict(
            blocks=self.decoder.blocks,
            x=x,
            mask=mask,
            memory=memory,
            memory_mask=memory_mask,
            token_mask=token_mask,
            rope=rope,
            cache=cache,
            ln_final=self.decoder.ln_final,
            checkpointing=self.decoder.checkpointing,
        )

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> ModelOutput:
        """Teacher-forced pass: encode the source, decode the target inputs (the two stacks'
        loops run from here, as ``encode`` and ``decode`` run them).

        Args:
            input_ids: (B, S) source token ids.
            attention_mask: (B, S), 1 = a real source token, 0 = padding.
            decoder_input_ids: (B, T) target inputs (<BOS> + target); None: ``labels``
                shifted right, starting with ``config.decoder_start_id``.
            decoder_attention_mask: (B, T), 1 = a real target token.
            labels: (B, T), aligned with the logits (not shifted), -100 = not scored.

        Returns:
            ``logits`` (B, T, V_tgt), ``hidden_states`` (B, T, d_model) the decoder's output,
            ``encoder_hidden_states`` the memory Z (B, S, d_model), ``loss`` the mean
            cross-entropy of the scored labels (None without labels).

        Raises:
            ValueError: neither ``decoder_input_ids`` nor ``labels`` is given.
        """
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("EncoderDecoder.forward needs decoder_input_ids or labels")
            decoder_input_ids = shift_right(
                labels, self.config.decoder_start_id, self.config.pad_id
            )
        memory = run_blocks(**self.encoder_pass(input_ids, attention_mask))  # Z (B, S, C)
        target = self.decoder_pass(
            decoder_input_ids, memory, attention_mask, decoder_attention_mask
        )
        h = run_blocks(**target)  # X ← Block_l(X, Z) for l = 1..L_dec, final norm: (B, T, C)
        logits = self.lm_logits(h)  # (B, T, V_tgt)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, encoder_hidden_states=memory, loss=loss)


def shift_right(labels: Tensor, start_id: int, pad_id: int) -> Tensor:
    """Teacher forcing (EDTraining): the decoder input at position t is the label of t - 1.
    labels (B, T) -> decoder inputs (B, T) = [start_id, labels[:, :-1]], with ``pad_id``
    wherever a -100 (IGNORE_INDEX: a label not scored, no token id) moved in."""
    start = torch.full_like(labels[:, :1], start_id)
    shifted = torch.cat([start, labels[:, :-1]], dim=1)  # (B, T)
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_id)
