"""The BERT-like encoder-only transformer, Algorithm 9 (ETransformer):

    X ← W_e[:, x] + W_p                     (+ segment embedding, + norm for BERT)
    for l = 1..L:  bidirectional self-attention and MLP, each with residual + norm
    then a head: masked-LM unembedding (ETraining: predict the tokens hidden by <MASK>)
    or pooled classification.

Padding (attention_mask = 0) is masked out of every attention and skipped by BatchNorm.
"""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor, nn

from ..nn import Encoder, HookPoint
from .base import GlassformerModel
from .config import ModelConfig
from .heads import ClassificationHead, LMHead, pool
from .inputs import InputEmbedding, ids_length, key_mask, positions_from_mask
from .outputs import ModelOutput, lm_loss

__all__ = ["EncoderClassifier", "EncoderMLM", "EncoderModel"]


class EncoderModel(GlassformerModel):
    """The encoder body without a head: ``logits`` is None, ``hidden_states`` (B, T, C);
    with ``config.pooler`` also BERT's pooler, ``pooled`` = tanh(W v + b) (B, C) of the pooled
    vector v (``config.pooling``), as Hugging Face's BertModel computes ``pooler_output``."""

    family = "encoder"
    hook_aliases: ClassVar[dict[str, str]] = {
        "embed": "",
        "encoder": "",
        "head": "",
    }  # public hook names (nn/hooks.py)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.embed = InputEmbedding(config, config.vocab_size)
        self.encoder = Encoder(
            config.n_layer,
            config.d_model,
            config.n_head,
            config.resolved_d_ff,
            graphs=config.layer_graphs("attention_graph"),
            **config.block_options(),
        )
        self._build_head()
        self.post_init()

    def _build_head(self) -> None:
        d = self.config.d_model
        self.pooler = nn.Linear(d, d) if self.config.pooler else None
        self.hook_pool = HookPoint()  # (B, C): the pooled vector v
        self.hook_pooled = HookPoint()  # (B, C): BERT's pooler output, tanh(W v + b)

    def encode(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """(hidden states (B, T, C), real-token mask (B, T) or None)."""
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))
        positions = positions_from_mask(None, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.embed(input_ids, positions, token_type_ids, token_mask=real)
        return self.encoder(x, mask, token_mask=real, rope=rope), real

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        token_type_ids: Tensor | None = None,
    ) -> ModelOutput:
        if labels is not None:
            raise ValueError(
                "EncoderModel has no head to score labels; use EncoderMLM or EncoderClassifier"
            )
        h, real = self.encode(input_ids, attention_mask, token_type_ids)
        pooled = None
        if self.pooler is not None:
            v = self.hook_pool(pool(h, real, self.config.pooling))  # (B, C)
            pooled = self.hook_pooled(self.pooler(v).tanh())
        return ModelOutput(logits=None, hidden_states=h, pooled=pooled)


class EncoderMLM(EncoderModel):
    """Encoder + masked-LM head: logits (B, T, V); labels (B, T) hold the original ids at the
    masked positions and -100 elsewhere."""

    def _build_head(self) -> None:
        self.head = LMHead(self.config, self.config.vocab_size, self.embed.token)

    def forward(self, input_ids, attention_mask=None, labels=None, *, token_type_ids=None):
        h, _ = self.encode(input_ids, attention_mask, token_type_ids)
        logits = self.head(h)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)


class EncoderClassifier(EncoderModel):
    """Encoder + classification head: logits (B, n_classes); labels (B,) class indices."""

    def _build_head(self) -> None:
        self.head = ClassificationHead(self.config)

    def forward(self, input_ids, attention_mask=None, labels=None, *, token_type_ids=None):
        h, real = self.encode(input_ids, attention_mask, token_type_ids)
        logits = self.head(h, real)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
