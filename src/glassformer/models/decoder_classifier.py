"""DecoderClassifier: a causal decoder (Phuong & Hutter's Algorithm 10, DTransformer) read as
a sequence classifier, as Hugging Face's ``GPT2ForSequenceClassification`` and
``LlamaForSequenceClassification`` do:

    X ← W_e[:, x] + W_p;   for l = 1..L:  X ← Block_l(X, causal mask);   H ← Norm(X)
    v = H[:, t*]  with t* the last real token (the only position that has read the whole text)
    logits = W_c v + b_c

The body is DecoderLM's (the same module names, so a language model's weights load into it);
the LM head is replaced by the classification head (``pooler`` when ``config.pooler``,
``classifier``; models/heads.py), which pools with ``config.pooling`` ("last" for a decoder
pre-trained as a language model).
"""

from __future__ import annotations

from torch import Tensor, nn

from ..nn import HookPoint, run_blocks
from . import heads, inputs
from .base import GlassformerModel
from .config import ModelConfig
from .inputs import ids_length, key_mask, positions_from_mask
from .outputs import ModelOutput, lm_loss
from .stacks import decoder_stack

__all__ = ["DecoderClassifier"]


class DecoderClassifier(GlassformerModel):
    """A causal decoder read as a sequence classifier: its hidden states, pooled by
    ``config.pooling`` ("last": the last real token, the only one that has read the whole
    text), give the logits of ``config.n_classes`` classes.

    ``forward`` gives logits (B, n_classes); labels (B,) are class indices. Modules:
    ``embed``, ``pos_embed``, ``blocks``, ``ln_final`` (as DecoderLM's), ``pooler`` (None
    unless ``config.pooler``), ``classifier`` (W_c v, without a bias, as the ``score`` of
    Hugging Face's GPT2ForSequenceClassification and LlamaForSequenceClassification).

    Args:
        config: the hyper-parameters; ``config.family`` must be "decoder".
    """

    family = "decoder"
    embed_input = inputs.embed_input  # ids, positions -> x^(0), rotary tables
    class_logits = heads.class_logits  # h (B, T, C) -> logits (B, n_classes)
    class_names = heads.class_names

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
        self.pooling = config.pooling
        self.pooler = heads.pooler(config)  # BERT's tanh(W v + b) or None
        # as Hugging Face's score: W_c v, without b_c
        self.classifier_dropout, self.classifier = heads.classifier(config, bias=False)
        self.hook_pool, self.hook_pooled, self.hook_logits = HookPoint(), HookPoint(), HookPoint()
        self.post_init()

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> ModelOutput:
        """Class logits of each sequence, and the loss when labels are given.

        Args:
            input_ids: (B, T) token ids.
            attention_mask: (B, T), 1 = a real token (padding on either side).
            labels: (B,) class indices.

        Returns:
            ``logits`` (B, n_classes), ``hidden_states`` (B, T, d_model), ``loss`` the mean
            cross-entropy (None without labels).
        """
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))  # (B, 1, 1, T), (B, T)
        positions = positions_from_mask(attention_mask, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.embed_input(input_ids, positions, token_mask=real, length=t)
        h = run_blocks(  # X ← Block_l(X) for l = 1..L, then the final norm: (B, T, C)
            self.blocks,
            x,
            mask,
            causal=True,
            token_mask=real,
            rope=rope,
            ln_final=self.ln_final,
            checkpointing=self.checkpointing,
        )
        logits = self.class_logits(h, real)  # (B, n_classes)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
