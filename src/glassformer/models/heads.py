"""Heads that turn the last hidden states into task outputs.

* LM / MLM head: unembedding, logits = W_u h (+ b), with BERT's optional transform
  h ← Norm(a(W h + b)) first (notes: "Output Layer"; the final projection of Phuong &
  Hutter's Algorithm 9).
* Classification head: pool the sequence into one vector (the first real token, CLS/<BOS>,
  the mean over real tokens, or a decoder's last real token), optionally BERT's pooler
  tanh(W v + b), then a linear layer to one score per class (Algorithm 9 applied to
  sequence classification).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..nn import HookPoint, TokenEmbedding, Unembedding, make_norm
from ..nn.feedforward import activation_fn
from .config import ModelConfig

__all__ = ["ClassificationHead", "LMHead", "pool"]


class LMHead:
    """The unembedding, on the model that mixes this class in: ``unembed`` W_u, and for BERT
    the transform before it, ``transform`` W and ``transform_norm``; hook points
    ``hook_transform`` (B, T, C) a(W h + b) before the norm, ``hook_logits`` (B, T, N_V)."""

    def add_lm_head(
        self, config: ModelConfig, vocab_size: int, tie_to: TokenEmbedding | None
    ) -> None:
        """Build the parts above; the unembedding shares ``tie_to``'s matrix when
        ``config.tie_embeddings``."""
        self.transform = self.transform_norm = None
        if config.mlm_transform:
            self.transform = nn.Linear(config.d_model, config.d_model)
            self.transform_norm = make_norm(config.norm, config.d_model, config.norm_eps)
            self.transform_activation = activation_fn(config.activation)
            self.hook_transform = HookPoint()
        tie = tie_to if config.tie_embeddings else None
        self.unembed = Unembedding(config.d_model, vocab_size, bias=config.head_bias, tie_to=tie)
        self.hook_logits = HookPoint()

    def lm_logits(self, h: Tensor) -> Tensor:
        """h (B, T, C) -> logits (B, T, N_V) = W_u h (+ b)."""
        if self.transform is not None:  # BERT: h ← Norm(a(W h + b))
            h = self.hook_transform(self.transform_activation(self.transform(h)))
            h = self.transform_norm(h)
        return self.hook_logits(self.unembed(h))  # (B, T, N_V): W_u h (+ b)


class ClassificationHead:
    """Sequence classification, on the model that mixes this class in: the pooled vector v,
    BERT's optional ``pooler`` tanh(W v + b), ``classifier_dropout`` and ``classifier``; hook
    points ``hook_pool`` (B, C) v, ``hook_pooled`` (B, C) v after the pooler (v itself
    without one) and ``hook_logits`` (B, n_classes)."""

    def add_classification_head(self, config: ModelConfig, *, bias: bool = True) -> None:
        """Build the parts above; ``bias=False``: a classifier without b_c (Hugging Face's
        ``score`` on a decoder)."""
        self.pooling = config.pooling
        self.pooler = nn.Linear(config.d_model, config.d_model) if config.pooler else None
        self.classifier_dropout = nn.Dropout(config.resolved_classifier_dropout)
        self.classifier = nn.Linear(config.d_model, config.n_classes, bias=bias)
        self.hook_pool = HookPoint()
        self.hook_pooled = HookPoint()
        self.hook_logits = HookPoint()

    def class_names(self) -> list[str]:
        """The name of each class, by index: ``config.extra["labels"]`` (the training data's
        labels, or a Hugging Face classifier's ``id2label``), else "0", "1", ... ."""
        names = self.config.extra.get("labels") or range(self.config.n_classes)
        return [str(n) for n in names]

    def class_logits(self, h: Tensor, token_mask: Tensor | None) -> Tensor:
        """h (B, T, C), token_mask (B, T) -> class logits (B, n_classes)."""
        v = self.hook_pool(pool(h, token_mask, self.pooling))  # (B, C)
        if self.pooler is not None:
            v = self.pooler(v).tanh()
        v = self.hook_pooled(v)
        return self.hook_logits(self.classifier(self.classifier_dropout(v)))  # (B, n_classes)


def pool(h: Tensor, token_mask: Tensor | None, pooling: str) -> Tensor:
    """h (B, T, C) -> (B, C): the first real token (``"cls"``: <BOS> / [CLS]), the mean over
    the real tokens (``"mean"``), or the last real token (``"last"``: the one position of a
    causal decoder that has read the whole text, as Hugging Face's
    ``*ForSequenceClassification`` decoders pool). ``token_mask`` (B, T), True = a real
    token, finds the first and last real token under right or left padding."""
    rows = torch.arange(h.shape[0], device=h.device)  # (B,)
    if pooling == "cls":
        if token_mask is None:
            return h[:, 0]  # (B, C)
        first = token_mask.long().argmax(dim=1)  # (B,): index of the first real token
        return h[rows, first]  # (B, C)
    if pooling == "last":
        if token_mask is None:
            return h[:, -1]  # (B, C)
        t = torch.arange(h.shape[1], device=h.device)  # (T,)
        last = (token_mask.long() * t).argmax(dim=1)  # (B,): index of the last real token
        return h[rows, last]  # (B, C)
    if token_mask is None:
        return h.mean(dim=1)
    w = token_mask.to(h.dtype)[..., None]  # (B, T, 1)
    return (h * w).sum(1) / w.sum(1).clamp(min=1.0)  # (B, C): mean over real tokens
