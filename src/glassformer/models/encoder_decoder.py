"""EncoderDecoder: the Vaswani et al. transformer, Algorithm 8 (EDTransformer).

    Z ← encode(x):  W_e[:, x] + W_p, then L_enc bidirectional blocks   (source padding masked)
    X ← decode(z, Z): W_e[:, z] + W_p, then L_dec blocks of
        causal self-attention, cross-attention to Z (Eq. 5), MLP
    P = softmax(W_u X)      distribution of the next target token

``encode()`` and ``decode()`` are separate calls so generation encodes the source once.
Trained with EDTraining (teacher forcing): decoder_input_ids = <BOS> + target, labels =
target + <EOS>; if only labels are given they are shifted right with ``decoder_start_id``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from ..nn import Decoder, DecoderCache, Encoder
from .base import GlassformerModel
from .config import ModelConfig
from .heads import LMHead
from .inputs import InputEmbedding, check_length, ids_length, key_mask, positions_from_mask
from .outputs import IGNORE_INDEX, ModelOutput, lm_loss

__all__ = ["EncoderDecoder", "shift_right"]


class EncoderDecoder(GlassformerModel):
    family = "encoder-decoder"
    # public hook names (nn/hooks.py): encoder.blocks.0..., decoder.blocks.0..., hook_logits
    hook_aliases: ClassVar[dict[str, str]] = {
        "src_embed": "encoder",
        "tgt_embed": "decoder",
        "head": "",
    }

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        c = config
        self.src_embed = InputEmbedding(c, c.vocab_size)
        shared = self.src_embed.token if c.share_embeddings else None
        self.tgt_embed = InputEmbedding(c, c.resolved_tgt_vocab_size, token=shared)
        options = c.block_options()
        self.encoder = Encoder(
            c.n_layer,
            c.d_model,
            c.n_head,
            c.resolved_d_ff,
            graphs=c.layer_graphs("attention_graph"),
            **options,
        )
        self.decoder = Decoder(
            c.resolved_n_decoder_layer,
            c.d_model,
            c.n_head,
            c.resolved_d_ff,
            graphs=c.layer_graphs("decoder_attention_graph"),
            cross_graphs=c.layer_graphs("cross_attention_graph"),
            **options,
        )
        self.head = LMHead(c, c.resolved_tgt_vocab_size, self.tgt_embed.token)
        self.post_init()

    def new_cache(self, max_len: int | None = None, *, rolling: bool = False) -> DecoderCache:
        """An empty KV cache for ``max_len`` target positions (default: the model's).
        ``rolling``: the decoder layers whose self-attention graph reaches back at most w - 1
        positions keep the latest w only (Decoder.new_cache)."""
        max_len = self.config.max_len if max_len is None else max_len
        return self.decoder.new_cache(max_len, rolling=rolling)

    def encode(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Source ids (B, S) -> memory Z (B, S, C)."""
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))
        positions = positions_from_mask(None, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.src_embed(input_ids, positions, token_mask=real)
        return self.encoder(x, mask, token_mask=real, rope=rope)

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
        x, rope = self.tgt_embed(decoder_input_ids, positions, token_mask=token_mask)
        h = self.decoder(
            x, memory, mask, memory_mask, token_mask=token_mask, rope=rope, cache=cache
        )
        return ModelOutput(logits=self.head(h), hidden_states=h, encoder_hidden_states=memory)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> ModelOutput:
        """Teacher-forced pass: source (B, S), target inputs (B, T) -> logits (B, T, V_tgt);
        labels (B, T) are aligned with the logits (not shifted), -100 = not scored."""
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("EncoderDecoder.forward needs decoder_input_ids or labels")
            decoder_input_ids = shift_right(
                labels, self.config.decoder_start_id, self.config.pad_id
            )
        memory = self.encode(input_ids, attention_mask)
        out = self.decode(decoder_input_ids, memory, attention_mask, decoder_attention_mask)
        if labels is not None:
            out.loss = lm_loss(out.logits, labels, shift=False)
        return out


def shift_right(labels: Tensor, start_id: int, pad_id: int) -> Tensor:
    """Teacher forcing (EDTraining): the decoder input at position t is the label of t - 1.
    labels (B, T) -> decoder inputs (B, T) = [start_id, labels[:, :-1]], with ``pad_id``
    wherever a -100 (IGNORE_INDEX: a label not scored, no token id) moved in."""
    start = torch.full_like(labels[:, :1], start_id)
    shifted = torch.cat([start, labels[:, :-1]], dim=1)  # (B, T)
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_id)
