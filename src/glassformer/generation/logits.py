"""From the logits of the next position to the token drawn (DInference's sampling step).

DInference (Phuong & Hutter, Algorithm 14) draws the next token y ~ q with q ∝ p^{1/τ}; on
logits l (p = softmax(l)) that is q = softmax(l / τ). Two filters may first restrict q to the
likeliest tokens, setting the logits of the others to -inf (probability 0):

  * top-k: keep the tokens whose logit is >= the k-th largest (ties with it are kept);
  * top-p (nucleus, Holtzman et al. 2020): sort the probabilities in increasing order and drop
    the tokens whose cumulative probability is <= 1 - p, i.e. keep the smallest set of the
    likeliest tokens holding probability >= p (the likeliest token is always kept).

Applied in that order: temperature, top-k, top-p. τ = 0 is the limit q → one-hot(argmax l):
greedy decoding. Logits with NaN or +inf in a row (damaged weights, or activations that
overflowed) give no distribution: ``check_logits`` refuses them, once per step.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "apply_temperature",
    "check_logits",
    "choose_next",
    "top_k_filter",
    "top_p_filter",
    "warp_logits",
]


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """l / τ for τ > 0 (τ = 1 returns the logits unchanged)."""
    if not temperature > 0:
        raise ValueError(f"temperature={temperature!r} is not allowed here: a number > 0")
    return logits if temperature == 1.0 else logits / temperature


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """logits (..., N_V) with every token below the k-th largest logit set to -inf; k = 0 or
    k >= V keeps all."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"top_k={k!r} is not allowed: an int >= 0 (0 = off)")
    if k == 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """logits (..., N_V) keeping the nucleus of probability >= p; p = 1 keeps all."""
    if not (isinstance(p, int | float) and 0.0 < p <= 1.0):
        raise ValueError(f"top_p={p!r} is not allowed: a number in (0, 1] (1 = off)")
    if p >= 1.0:
        return logits
    ascending, order = torch.sort(logits, dim=-1)  # (..., N_V), least likely first
    cumulative = ascending.softmax(dim=-1).cumsum(dim=-1)  # mass of this token and all below
    drop = cumulative <= 1.0 - p  # (..., N_V) in sorted order
    drop[..., -1] = False  # the likeliest token always stays
    drop = drop.scatter(-1, order, drop)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def warp_logits(logits: Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    """Temperature, then top-k, then top-p: the logits of the distribution q that is sampled."""
    logits = apply_temperature(logits, temperature)
    return top_p_filter(top_k_filter(logits, top_k), top_p)


def check_logits(logits: Tensor) -> None:
    """Refuse next-token logits (B, N_V) with a row holding NaN or +inf, or no finite value:
    no token can be chosen from it (argmax would pick a NaN, a draw fails). A finite sum
    clears the whole batch in one reduction; only otherwise are the rows looked at."""
    if bool(torch.isfinite(logits.sum())):
        return
    bad = (logits.isnan() | logits.isposinf()).any(-1) | ~logits.isfinite().any(-1)  # (B,)
    if bool(bad.any()):
        rows = bad.nonzero().flatten().tolist()
        shown = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
        raise ValueError(
            f"the model's next-token logits hold NaN or infinite values (row {shown} of "
            f"{len(bad)}): its weights are damaged or its activations overflowed (e.g. in "
            "float16); no token can be chosen"
        )


def choose_next(
    logits: Tensor,
    temperature: float,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """logits (B, N_V) -> next token (B,): argmax for τ = 0, else a draw from q (see module)."""
    check_logits(logits)
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    q = warp_logits(logits.float(), temperature, top_k, top_p).softmax(dim=-1)  # (B, N_V)
    return torch.multinomial(q, 1, generator=generator).squeeze(-1)  # (B,)
