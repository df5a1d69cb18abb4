"""Heads that turn the last hidden states into task outputs.

* LM / MLM head: unembedding, logits = W_u h (+ b), with BERT's optional transform
  h ← Norm(a(W h + b)) first (notes: "Output Layer"; the final projection of Phuong &
  Hutter's Algorithm 9).
* Classification head: pool the sequence into one vector (the first real token, CLS/<BOS>,
  the mean over real tokens, or a decoder's last real token), optionally BERT's pooler
  tanh(W v + b), then a linear layer to one score per class (Algorithm 9 applied to
  sequence classification).

A family's ``__init__`` lists its head's parts, each built by a function here, and binds
the head's function as a method (``lm_logits = heads.lm_logits``):

  LM / MLM head: ``transform``, ``transform_norm``, ``transform_activation`` and
    ``hook_transform`` (B, T, C) a(W h + b) before the norm (BERT's transform; None without
    ``config.mlm_transform``; `mlm_transform`), ``unembed`` W_u (`unembedding`),
    ``hook_logits`` (B, T, N_V).
  Classification head: ``pooling`` (the config's), ``pooler`` (BERT's tanh(W v + b), None
    without ``config.pooler``; `pooler`), ``classifier_dropout`` and ``classifier`` W_c
    (`classifier`), hook points ``hook_pool`` (B, C) the pooled vector v, ``hook_pooled``
    (B, C) v after the pooler, ``hook_logits`` (B, n_classes).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from ..nn import TokenEmbedding, Unembedding, make_norm
from .config import ModelConfig

__all__ = [
    "ClassificationHead",
    "LMHead",
    "class_logits",
    "class_names",
    "classifier",
    "lm_logits",
    "mlm_transform",
    "pool",
    "pooler",
    "unembedding",
]


@runtime_checkable
class LMHead(Protocol):
    """A model with an unembedding: ``isinstance(model, LMHead)``."""

    unembed: Unembedding

    def lm_logits(self, h: Tensor) -> Tensor: ...


@runtime_checkable
class ClassificationHead(Protocol):
    """A sequence classifier: ``isinstance(model, ClassificationHead)``."""

    classifier: nn.Linear

    def class_logits(self, h: Tensor, token_mask: Tensor | None) -> Tensor: ...

    def class_names(self) -> list[str]: ...


def mlm_transform(config: ModelConfig) -> tuple[nn.Linear | None, nn.Module | None]:
    """BERT's transform before the unembedding, h ← Norm(a(W h + b)): (``transform`` W,
    ``transform_norm``), both None without ``config.mlm_transform``; a family with one also
    lists ``transform_activation`` a (``config.activation``) and ``hook_transform``."""
    if not config.mlm_transform:
        return None, None
    linear = nn.Linear(config.d_model, config.d_model)
    return linear, make_norm(config.norm, config.d_model, config.norm_eps)


def unembedding(config: ModelConfig, vocab_size: int, tie_to: TokenEmbedding) -> Unembedding:
    """W_u (``vocab_size``, C), sharing ``tie_to``'s matrix when ``config.tie_embeddings``."""
    tie = tie_to if config.tie_embeddings else None
    return Unembedding(config.d_model, vocab_size, bias=config.head_bias, tie_to=tie)


def lm_logits(self, h: Tensor) -> Tensor:
    """h (B, T, C) -> logits (B, T, N_V) = W_u h (+ b), from the LM head's parts of ``self``
    (a family binds this function as its method ``lm_logits``)."""
    if self.transform is not None:  # BERT: h ← Norm(a(W h + b))
        h = self.hook_transform(self.transform_activation(self.transform(h)))
        h = self.transform_norm(h)
    return self.hook_logits(self.unembed(h))  # (B, T, N_V): W_u h (+ b)


def pooler(config: ModelConfig) -> nn.Linear | None:
    """BERT's pooler W (C, C) of tanh(W v + b), or None without ``config.pooler``."""
    return nn.Linear(config.d_model, config.d_model) if config.pooler else None


def classifier(config: ModelConfig, *, bias: bool = True) -> tuple[nn.Dropout, nn.Linear]:
    """(``classifier_dropout``, ``classifier`` W_c (n_classes, C)); ``bias=False``: without
    b_c (Hugging Face's ``score`` on a decoder)."""
    dropout = nn.Dropout(config.resolved_classifier_dropout)
    return dropout, nn.Linear(config.d_model, config.n_classes, bias=bias)


def class_names(self) -> list[str]:
    """The name of each class, by index: ``config.extra["labels"]`` (the training data's
    labels, or a Hugging Face classifier's ``id2label``), else "0", "1", ... ."""
    names = self.config.extra.get("labels") or range(self.config.n_classes)
    return [str(n) for n in names]


def class_logits(self, h: Tensor, token_mask: Tensor | None) -> Tensor:
    """h (B, T, C), token_mask (B, T) -> class logits (B, n_classes), from the classification
    head's parts of ``self`` (pooled by its ``pooling``, the config's)."""
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
