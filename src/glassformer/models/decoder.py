"""DecoderLM: the GPT-like decoder-only transformer, Algorithm 10 (DTransformer).

    X ← W_e[:, x] + W_p          token and position embedding
    for l = 1..L:  X ← X + MHAttention(Norm(X), causal mask);  X ← X + MLP(Norm(X))
    X ← Norm(X);   P = softmax(W_u X)     next-token distribution at every position

(pre-norm shown; ``norm_first=False`` gives post-norm). Trained with DTraining: minimise
-Σ_t log P(x[t+1] | x[1:t]); ``labels`` are aligned with ``input_ids`` and shifted inside.

Each layer attends along its graph (``config.attention_graph``, glassformer.graphs). When every
layer's graph reaches back a bounded number of positions (a causal sliding window of w: w - 1)
the output at position t depends on the latest L·(w - 1) + 1 tokens only: a rolling KV cache
keeps w keys per layer (``new_cache(rolling=True)``), and with rotary or no positional encoding,
whose attention depends on relative positions only, a sequence may run past ``max_len``
(``length_limit``).
"""

from __future__ import annotations

from functools import partial

from torch import Tensor
from torch.utils.checkpoint import checkpoint

from ..nn import DecoderCache
from ..nn.transformer import lookbacks, new_decoder_cache
from .base import GlassformerModel
from .config import ModelConfig
from .heads import LMHead
from .inputs import InputEmbedding, check_length, ids_length, key_mask, positions_from_mask
from .outputs import IGNORE_INDEX, ModelOutput, lm_loss
from .stacks import decoder_stack

__all__ = ["DecoderLM"]


class DecoderLM(GlassformerModel, InputEmbedding, LMHead):
    """Modules under TransformerLens's names, so that a hook's name is its attribute path:
    ``embed``, ``pos_embed`` (InputEmbedding), ``blocks`` (DecoderBlocks without
    cross-attention), ``ln_final``, ``unembed`` (LMHead)."""

    family = "decoder"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.add_input_embedding(config, config.vocab_size)
        self.blocks, self.ln_final = decoder_stack(config, cross_attention=False)
        self.add_lm_head(config, config.vocab_size, tie_to=self.embed)
        windowed = all(b is not None for b in lookbacks(self.blocks))
        relative = config.positional in ("rotary", "none")
        self._length_limit = None if windowed and relative else config.max_len
        self.post_init()

    def length_limit(self) -> int | None:
        """How many positions a sequence may have: ``max_len``, or None (no limit) when every
        layer attends a bounded window of earlier positions and the positions are rotary or
        none (see the module docstring)."""
        return self._length_limit

    def new_cache(self, max_len: int | None = None, *, rolling: bool = False) -> DecoderCache:
        """An empty KV cache for ``max_len`` positions (default: the model's). ``rolling``:
        the layers whose graph reaches back at most w - 1 positions keep the latest w only,
        whatever the length (nn.transformer.new_decoder_cache)."""
        max_len = self.config.max_len if max_len is None else max_len
        return new_decoder_cache(self.blocks, max_len, rolling=rolling)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        positions: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> ModelOutput:
        """input_ids (B, T); attention_mask (B, S) with 1 = real token, covering the cached
        positions too (S = cached + T); labels (B, T), -100 = not scored."""
        past = 0 if cache is None else cache.length
        t = ids_length(input_ids)
        covers = f" (S = {past} cached + {t} new positions)" if past else ""
        shape = (input_ids.shape[0], past + t)
        mask, real = key_mask(attention_mask, shape, covers=covers)  # (B, 1, 1, S), (B, S)
        limit = self._length_limit
        if positions is None:
            positions = positions_from_mask(attention_mask, t, past, input_ids.device, limit)
        else:
            check_length(t, past, limit)
        token_mask = None if real is None else real[:, -t:]  # (B, T) the new positions
        x, rope = self.embed_input(input_ids, positions, token_mask=token_mask, length=past + t)
        caches = [None] * len(self.blocks) if cache is None else cache.self_attn
        recompute = self.checkpointed()
        for block, layer_cache in zip(self.blocks, caches, strict=True):  # X ← Block_l(X)
            run = partial(checkpoint, block, use_reentrant=False) if recompute else block
            x = run(x, mask=mask, causal=True, token_mask=token_mask, rope=rope, cache=layer_cache)
        h = x if self.ln_final is None else self.ln_final(x, token_mask)  # (B, T, C)
        logits = self.lm_logits(h)  # (B, T, N_V)
        loss = None
        if labels is not None:
            if token_mask is not None:
                labels = labels.masked_fill(~token_mask, IGNORE_INDEX)
            loss = lm_loss(logits, labels, shift=True)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
