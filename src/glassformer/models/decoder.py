"""DecoderLM: the GPT-like decoder-only transformer, Algorithm 10 (DTransformer) of
Phuong & Hutter, "Formal Algorithms for Transformers" (2022).

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

from torch import Tensor, nn

from ..nn import DecoderCache, HookPoint, run_blocks
from ..nn.feedforward import activation_fn
from ..nn.transformer import lookbacks, new_decoder_cache
from . import heads, inputs
from .base import GlassformerModel
from .config import ModelConfig
from .inputs import check_length, ids_length, key_mask, positions_from_mask
from .outputs import IGNORE_INDEX, ModelOutput, lm_loss
from .stacks import decoder_stack

__all__ = ["DecoderLM"]


class DecoderLM(GlassformerModel):
    """A decoder-only (GPT-like) transformer language model: the family "decoder".

    It is the auto-regressive transformer of the lecture notes "Formal Algorithms for
    Transformers" ("Auto-regressive models": masked transformer blocks applied M times, then a
    linear layer and a softmax give the distribution of the next token), Algorithm 10
    (DTransformer) of Phuong & Hutter's paper of the same name: token and position embedding,
    ``n_layer`` blocks of causal self-attention and MLP, a final norm, the unembedding.

    Its parts, under TransformerLens's names (an attribute path is a hook point's name and a
    weight's name in a checkpoint):

    - ``embed``: the token embedding W_e (`TokenEmbedding`); ``pos_embed``: the positional
      encoding (W_p when learned); ``token_type_embed`` and ``ln_embed``: BERT-style segment
      embedding and embedding norm, None unless configured;
    - ``blocks``: ``n_layer`` `DecoderBlock`s without cross-attention, each ``ln1``, ``attn``,
      ``ln2``, ``mlp``;
    - ``ln_final``: the norm after the last block (None for post-norm);
    - ``unembed``: W_u, tied to W_e (``tie_embeddings``).

    Args:
        config: the hyper-parameters; ``config.family`` must be "decoder".

    Raises:
        ValueError: the config is of another family.

    Examples:
        >>> import torch
        >>> from glassformer import DecoderLM, ModelConfig
        >>> _ = torch.manual_seed(0)
        >>> model = DecoderLM(ModelConfig(vocab_size=50, d_model=32, n_layer=2, n_head=4))
        >>> ids = torch.randint(0, 50, (2, 10))
        >>> out = model(ids, labels=ids)
        >>> out.logits.shape, out.hidden_states.shape
        (torch.Size([2, 10, 50]), torch.Size([2, 10, 32]))
        >>> out.loss.item() > 0
        True
    """

    family = "decoder"
    embed_input = inputs.embed_input  # ids, positions -> x^(0), rotary tables
    lm_logits = heads.lm_logits  # h (B, T, C) -> logits (B, T, N_V)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.embed = inputs.token_embedding(config, config.vocab_size)  # W_e
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
        self.blocks, self.ln_final = decoder_stack(config, cross_attention=False)
        self.transform, self.transform_norm = heads.mlm_transform(config)  # BERT's, or None
        if self.transform is not None:
            self.transform_activation = activation_fn(config.activation)  # a
            self.hook_transform = HookPoint()  # (B, T, C): a(W h + b)
        self.unembed = heads.unembedding(config, config.vocab_size, tie_to=self.embed)  # W_u
        self.hook_logits = HookPoint()
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
        """Next-token logits at every position, and the loss when labels are given.

        Args:
            input_ids: (B, T) token ids.
            attention_mask: (B, S), 1 = a real token, 0 = padding; it covers the cached
                positions too (S = cached + T). None: every token is real.
            labels: (B, T), aligned with ``input_ids`` (shifted inside: position t is
                scored against the label at t + 1); -100 = not scored.
            positions: (B, T) or (T,) the positions of the new tokens (default: counted over
                the real tokens of ``attention_mask``, after the cached ones).
            cache: a KV cache from ``new_cache()`` for incremental decoding; it grows by T.

        Returns:
            ``logits`` (B, T, vocab_size), ``hidden_states`` (B, T, d_model) after the final
            norm, ``loss`` the mean cross-entropy of the scored labels (None without labels).
        """
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
        h = run_blocks(  # X ← Block_l(X) for l = 1..L, then the final norm: (B, T, C)
            self.blocks,
            x,
            mask,
            causal=True,
            token_mask=token_mask,
            rope=rope,
            cache=cache,
            ln_final=self.ln_final,
            checkpointing=self.checkpointing,
        )
        logits = self.lm_logits(h)  # (B, T, N_V)
        loss = None
        if labels is not None:
            if token_mask is not None:
                labels = labels.masked_fill(~token_mask, IGNORE_INDEX)
            loss = lm_loss(logits, labels, shift=True)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
