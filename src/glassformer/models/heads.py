"""Heads that turn the last hidden states into task outputs.

* LM / MLM head: unembedding, logits = W_u h (+ b), with BERT's optional transform
  h ← Norm(a(W h + b)) first (notes: "Output Layer"; Algorithm 9's final projection).
* Classification head: pool the sequence into one vector (the first, CLS/<BOS>, position,
  or the mean over real tokens), optionally BERT's pooler tanh(W v + b), then a linear
  layer to one score per class (Algorithm 9 applied to sequence classification).
"""

from __future__ import annotations

from torch import Tensor, nn

from ..nn import HookPoint, TokenEmbedding, Unembedding, make_norm
from ..nn.feedforward import activation_fn
from .config import ModelConfig

__all__ = ["ClassificationHead", "LMHead", "pool"]


class LMHead(nn.Module):
    """h (B, T, C) -> logits (B, T, V); hook point ``hook_logits`` (B, T, V)."""

    def __init__(self, config: ModelConfig, vocab_size: int, tie_to: TokenEmbedding | None):
        super().__init__()
        self.transform = self.transform_norm = None
        if config.mlm_transform:
            self.transform = nn.Linear(config.d_model, config.d_model)
            self.transform_norm = make_norm(config.norm, config.d_model, config.norm_eps)
        self.activation = activation_fn(config.activation) if config.mlm_transform else None
        if config.mlm_transform:
            self.hook_transform = HookPoint()  # (B, T, C): a(W h + b), before the norm
        tie = tie_to if config.tie_embeddings else None
        self.unembed = Unembedding(config.d_model, vocab_size, bias=config.head_bias, tie_to=tie)
        self.hook_logits = HookPoint()

    def forward(self, h: Tensor) -> Tensor:
        if self.transform is not None:  # BERT: h ← Norm(a(W h + b))
            h = self.transform_norm(self.hook_transform(self.activation(self.transform(h))))
        return self.hook_logits(self.unembed(h))  # (B, T, V): W_u h (+ b)


class ClassificationHead(nn.Module):
    """h (B, T, C), token_mask (B, T) -> class logits (B, n_classes); hook points
    ``hook_pool`` (B, C) the pooled vector v, ``hook_pooled`` (B, C) v after BERT's pooler
    (v itself without one) and ``hook_logits`` (B, n_classes)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pooling = config.pooling
        self.pooler = nn.Linear(config.d_model, config.d_model) if config.pooler else None
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.d_model, config.n_classes)
        self.hook_pool = HookPoint()
        self.hook_pooled = HookPoint()
        self.hook_logits = HookPoint()

    def forward(self, h: Tensor, token_mask: Tensor | None) -> Tensor:
        v = self.hook_pool(pool(h, token_mask, self.pooling))  # (B, C)
        if self.pooler is not None:
            v = self.pooler(v).tanh()
        v = self.hook_pooled(v)
        return self.hook_logits(self.classifier(self.dropout(v)))  # (B, n_classes)


def pool(h: Tensor, token_mask: Tensor | None, pooling: str) -> Tensor:
    """h (B, T, C) -> (B, C): the first position (``"cls"``: <BOS> / [CLS]) or the mean over
    the real tokens (``"mean"``)."""
    if pooling == "cls":
        return h[:, 0]  # (B, C)
    if token_mask is None:
        return h.mean(dim=1)
    w = token_mask.to(h.dtype)[..., None]  # (B, T, 1)
    return (h * w).sum(1) / w.sum(1).clamp(min=1.0)  # (B, C): mean over real tokens
