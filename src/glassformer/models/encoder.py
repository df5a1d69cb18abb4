"""The BERT-like encoder-only transformer, Algorithm 9 (ETransformer):

    X ← W_e[:, x] + W_p                     (+ segment embedding, + norm for BERT)
    for l = 1..L:  bidirectional self-attention and MLP, each with residual + norm
    then a head: masked-LM unembedding (ETraining: predict the tokens hidden by <MASK>)
    or pooled classification.

Padding (attention_mask = 0) is masked out of every attention and skipped by BatchNorm, and
positions count over the real tokens: a left-padded input gives the unpadded outputs.
"""

from __future__ import annotations

from functools import partial

from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ..nn import HookPoint
from .base import GlassformerModel
from .config import ModelConfig
from .heads import ClassificationHead, LMHead, pool
from .inputs import InputEmbedding, ids_length, key_mask, positions_from_mask
from .outputs import ModelOutput, lm_loss
from .stacks import encoder_stack

__all__ = ["EncoderClassifier", "EncoderMLM", "EncoderModel"]


class EncoderModel(GlassformerModel, InputEmbedding):
    """The encoder body without a head: ``logits`` is None, ``hidden_states`` (B, T, C);
    with ``config.pooler`` also BERT's pooler, ``pooled`` = tanh(W v + b) (B, C) of the pooled
    vector v (``config.pooling``), as Hugging Face's BertModel computes ``pooler_output``.

    Modules under TransformerLens's names, so that a hook's name is its attribute path:
    ``embed``, ``pos_embed``, ``token_type_embed``, ``ln_embed`` (InputEmbedding), ``blocks``
    (EncoderBlocks), ``ln_final``, then the head's."""

    family = "encoder"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.add_input_embedding(config, config.vocab_size)
        self.blocks, self.ln_final = encoder_stack(config)
        self._build_head()
        self.post_init()

    def _build_head(self) -> None:
        d = self.config.d_model
        self.pooler = nn.Linear(d, d) if self.config.pooler else None
        self.hook_pool = HookPoint()  # (B, C): the pooled vector v
        self.hook_pooled = HookPoint()  # (B, C): BERT's pooler output, tanh(W v + b)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        token_type_ids: Tensor | None = None,
    ) -> ModelOutput:
        """input_ids (B, T); attention_mask (B, T) with 1 = real token; labels as the head
        scores them (``outputs``)."""
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))  # (B, 1, 1, T), (B, T)
        positions = positions_from_mask(attention_mask, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.embed_input(input_ids, positions, token_type_ids, token_mask=real)
        recompute = self.checkpointed()
        for block in self.blocks:  # X ← Block_l(X)
            run = partial(checkpoint, block, use_reentrant=False) if recompute else block
            x = run(x, mask, token_mask=real, rope=rope)
        h = x if self.ln_final is None else self.ln_final(x, real)  # (B, T, C)
        return self.outputs(h, real, labels)

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        """The head's outputs from the hidden states h (B, T, C) and the real tokens (B, T):
        here the hidden states and, with a pooler, BERT's pooled vector."""
        if labels is not None:
            raise ValueError(
                "EncoderModel has no head to score labels; use EncoderMLM or EncoderClassifier"
            )
        pooled = None
        if self.pooler is not None:
            v = self.hook_pool(pool(h, real, self.config.pooling))  # (B, C)
            pooled = self.hook_pooled(self.pooler(v).tanh())
        return ModelOutput(logits=None, hidden_states=h, pooled=pooled)


class EncoderMLM(EncoderModel, LMHead):
    """Encoder + masked-LM head (``unembed``, BERT's ``transform``): logits (B, T, V); labels
    (B, T) hold the original ids at the masked positions and -100 elsewhere."""

    def _build_head(self) -> None:
        self.add_lm_head(self.config, self.config.vocab_size, tie_to=self.embed)

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        logits = self.lm_logits(h)  # (B, T, N_V)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)


class EncoderClassifier(EncoderModel, ClassificationHead):
    """Encoder + classification head (``pooler``, ``classifier``): logits (B, n_classes);
    labels (B,) class indices."""

    def _build_head(self) -> None:
        self.add_classification_head(self.config)

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        logits = self.class_logits(h, real)  # (B, n_classes)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
