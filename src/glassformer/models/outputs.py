"""What the models return, and the losses they compute (cross-entropy, padding ignored)."""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor

__all__ = ["IGNORE_INDEX", "ModelOutput", "lm_loss"]

IGNORE_INDEX = -100  # label value that is not scored (padding, unmasked MLM positions)


@dataclass
class ModelOutput:
    """``logits``: (B, T, N_V) for language models, (B, n_classes) for classifiers;
    ``hidden_states``: (B, T, C), the last block's output after the final norm, before the head;
    ``loss``: mean cross-entropy over the scored labels, when labels were given;
    ``encoder_hidden_states``: (B, S, C), encoder-decoder only;
    ``pooled``: (B, C), EncoderModel with ``config.pooler``: BERT's tanh(W v + b) of the pooled
    vector v (Hugging Face's ``pooler_output``)."""

    logits: Tensor | None
    hidden_states: Tensor
    loss: Tensor | None = None
    encoder_hidden_states: Tensor | None = None
    pooled: Tensor | None = None


def lm_loss(logits: Tensor, labels: Tensor, *, shift: bool) -> Tensor:
    """Cross-entropy of (B, T, N_V) logits against (B, T) labels; -100 is not scored.

    shift=True scores position n against label n+1 (causal LM: predict the next token).
    Labels may be any shape matching the logits' leading dimensions ((B,) for classifiers)."""
    if shift:  # label n+1 moves under logit n; the last position scores nothing
        labels = F.pad(labels[:, 1:], (0, 1), value=IGNORE_INDEX)  # no copy of the logits
    labels = labels.reshape(-1)
    z = logits.reshape(-1, logits.shape[-1]).float()  # (N, N_V)
    total = F.cross_entropy(z, labels, ignore_index=IGNORE_INDEX, reduction="sum")
    # mean over scored labels; a batch with none scores 0 instead of 0/0 = NaN
    return total / (labels != IGNORE_INDEX).sum().clamp(min=1)
