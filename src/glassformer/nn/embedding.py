"""Token embedding and unembedding.

Embedding maps token id x[n] to the row W_e[x[n]] ∈ R^C of W_e (N_V, C) (the notes' "Token
Embedding" writes the transpose: the column W_e[:, x[n]]), optionally scaled by √C as in
Vaswani et al.; the input to the first block is x_n^(0) = W_e[x[n]] + W_p[n]. Unembedding maps
the last hidden vector back to one score (logit) per vocabulary entry, logits = h W_uᵀ (+ b)
with W_u (N_V, C); with weight tying W_u = W_e.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .arguments import positive_int

__all__ = ["TokenEmbedding", "Unembedding"]


class TokenEmbedding(nn.Module):
    """ids (B, T) -> W_e[ids] (· √C if ``scale``) (B, T, C).

    W_e is drawn from N(0, std²), std 0.02 by default; with ``scale``, from N(0, 1/C), so that
    the scaled embeddings √C · W_e start with RMS 1, as large as the sinusoids r_n they are
    added to (RMS 1/√2): the reason the notes give for the scale ("Transformer:
    Self-Attention and Parallelization", *Embedding & Positional Encoding*: the position values
    lie in [-1, 1] and the token features must not be much smaller). N(0, 1/C) with the √C
    scale is fairseq's initialisation of the Transformer's embeddings. At std 0.02 they would
    start at 0.02 √C (0.23 at C = 128, 0.45 at C = 512).

    Not when the embedding is ``tied`` to the unembedding (W_u = W_e, read without the √C):
    each position's hidden state then points along its own input token's row, and the logit
    of that token starts near 0.9 · √C (9.9 at C = 128), so the untrained model predicts its
    input (a first loss of 9.8 nats on 31 tokens, ln 31 = 3.4) and small tasks stall. A tied
    embedding is drawn with the default std, and training grows it (``init_std``).

    Args:
        vocab_size: the number of tokens, the notes' N_V: the rows of W_e (its columns in the
            notes, which embed a token as a column vector).
        d_model: the embedding width C (the notes' D).
        scale: multiply the embeddings by √C (Vaswani et al.).

    Raises:
        ValueError: a size that is not a positive int; in ``forward``, an id outside
            [0, vocab_size) or ids that are not integers.
    """

    def __init__(self, vocab_size: int, d_model: int, *, scale: bool = False) -> None:
        super().__init__()
        vocab_size = positive_int("TokenEmbedding", "vocab_size", vocab_size)
        d_model = positive_int("TokenEmbedding", "d_model", d_model)
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))  # W_e, one row per token
        self.multiplier = math.sqrt(d_model) if scale else 1.0
        self.reset_parameters()

    def init_std(self, std: float = 0.02, *, tied: bool = False) -> float:
        """The std W_e is drawn with: 1/√C when the embedding is scaled by √C and not
        ``tied`` to an unembedding (scaled RMS 1), else ``std``."""
        return 1.0 / self.multiplier if self.multiplier != 1.0 and not tied else std

    def reset_parameters(self, std: float = 0.02, *, tied: bool = False) -> None:
        """W_e ~ N(0, init_std(std, tied=tied)²)."""
        nn.init.normal_(self.weight, 0.0, self.init_std(std, tied=tied))

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def forward(self, ids: Tensor) -> Tensor:
        try:
            x = F.embedding(ids, self.weight)  # (B, T, C)
        except (IndexError, RuntimeError) as err:  # the lookup checks the ids: no extra pass
            _explain(ids, self.vocab_size, err)
            raise
        return x * self.multiplier if self.multiplier != 1.0 else x


def _explain(ids: Tensor, vocab_size: int, err: Exception) -> None:
    """Raise a ValueError naming what is wrong with ``ids`` when the lookup failed because of
    them (integers in [0, vocab_size)); return for any other failure."""
    if ids.dtype not in (torch.long, torch.int):
        raise ValueError(
            f"token ids must be integers in [0, {vocab_size}) of dtype torch.long or torch.int; "
            f"got a tensor of dtype {ids.dtype}"
        ) from None
    if isinstance(err, IndexError) and ids.numel():
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= vocab_size:
            bad = high if high >= vocab_size else low
            raise ValueError(
                f"token id {bad} is out of range for the vocabulary of {vocab_size} tokens: "
                f"allowed ids 0..{vocab_size - 1} (ids given span {low}..{high})"
            ) from None


class Unembedding(nn.Module):
    """h (B, T, C) -> logits (B, T, N_V) = h W_uᵀ (+ b); ``tie_to`` shares W_u with an embedding.

    The matrix is ``proj.weight`` (N_V, C), TransformerLens's W_U transposed.

    Args:
        d_model: the width C of the hidden states.
        vocab_size: the number of logits N_V.
        bias: a bias b on the logits.
        tie_to: a `TokenEmbedding` whose W_e becomes W_u (W_u = W_e, one parameter).

    Raises:
        ValueError: a size that is not a positive int, or ``tie_to`` of another shape.
    """

    def __init__(
        self,
        d_model: int,
        vocab_size: int,
        *,
        bias: bool = False,
        tie_to: TokenEmbedding | None = None,
    ) -> None:
        super().__init__()
        d_model = positive_int("Unembedding", "d_model", d_model)
        vocab_size = positive_int("Unembedding", "vocab_size", vocab_size)
        self.proj = nn.Linear(d_model, vocab_size, bias=bias)
        if tie_to is not None:
            if tie_to.weight.shape != self.proj.weight.shape:
                raise ValueError(
                    f"cannot tie: embedding is {tuple(tie_to.weight.shape)}, unembedding needs "
                    f"{tuple(self.proj.weight.shape)}"
                )
            self.proj.weight = tie_to.weight

    def forward(self, h: Tensor) -> Tensor:
        return self.proj(h)  # (B, T, N_V): h W_uᵀ (+ b)
