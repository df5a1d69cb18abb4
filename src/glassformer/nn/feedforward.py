"""The position-wise feed-forward sub-layer (the "MLP across features" of the notes):

    FeedForward(X) = W_2 · a(W_1 · X + b_1) + b_2,   W_1 ∈ R^{d×d_ff}, W_2 ∈ R^{d_ff×d}

applied to every token independently. ``a`` is relu, gelu (erf form), gelu_tanh (GPT-2's
approximation) or swiglu, the gated form a(X) = silu(X W_gate) ⊙ (X W_up) used by Llama, for
which W_1 holds [W_gate; W_up] stacked (one matmul computes both).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .arguments import fraction, positive_int
from .hooks import HookPoint

__all__ = ["ACTIVATIONS", "FeedForward", "activation_fn"]

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "swiglu")
"""The activations a `FeedForward` takes (ModelConfig.activation)."""


def gelu_tanh(h: Tensor) -> Tensor:
    """GPT-2's GELU: ½ h (1 + tanh(√(2/π)(h + 0.044715 h³)))."""
    return F.gelu(h, approximate="tanh")


_ELEMENTWISE = {
    "relu": F.relu,  # max(0, h)
    "gelu": F.gelu,  # h Φ(h) = ½ h (1 + erf(h/√2))
    "gelu_tanh": gelu_tanh,
}


def activation_fn(name: str):
    """The element-wise activation ``a`` named ``name`` (relu, gelu, gelu_tanh)."""
    if name not in _ELEMENTWISE:
        raise ValueError(
            f"activation {name!r} is not element-wise; choose one of {tuple(_ELEMENTWISE)}"
        )
    return _ELEMENTWISE[name]


class FeedForward(nn.Module):
    """x (B, T, C) -> fc2(dropout(a(fc1(x)))) (B, T, C).

    ``dropout`` is the rate on the hidden layer a(fc1(x)) in training: torch.nn's
    TransformerEncoderLayer and BART (activation_dropout) drop there, GPT-2 and BERT do not
    (0.0); the dropout on the output is the block's (glassformer.nn.blocks).

    Hook points (TransformerLens's names): ``hook_pre`` (B, T, d_ff) the hidden layer before
    the activation, W_1 x + b_1 (for swiglu the gate's, with ``hook_pre_linear`` the up
    projection's); ``hook_post`` (B, T, d_ff) after it, a(W_1 x + b_1).

    Args:
        d_model: the width C of the input and output.
        d_ff: the width of the hidden layer (``fc1``'s output; swiglu's gate and up
            projections have d_ff each).
        activation: a: "relu", "gelu", "gelu_tanh" (GPT-2's) or "swiglu".
        bias: biases b_1, b_2 on ``fc1`` and ``fc2``.
        dropout: the rate on the hidden layer, in [0, 1).

    Raises:
        ValueError: an unknown activation, a size not a positive int, a dropout outside
            [0, 1).
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "gelu",
        *,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r} is not known; choose one of {ACTIVATIONS}")
        d_model = positive_int("FeedForward", "d_model", d_model)
        d_ff = positive_int("FeedForward", "d_ff", d_ff)
        dropout = fraction("FeedForward", "dropout", dropout)
        self.activation = activation
        gated = activation == "swiglu"
        self.fc1 = nn.Linear(d_model, 2 * d_ff if gated else d_ff, bias=bias)  # W_1, b_1
        self.hook_pre = HookPoint()
        if gated:
            self.hook_pre_linear = HookPoint()
        self.hook_post = HookPoint()
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2, b_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = self.fc1(x)  # (B, T, d_ff), or (B, T, 2 d_ff) for swiglu
        if self.activation == "swiglu":  # a(X) = silu(X W_gate) ⊙ (X W_up)
            gate, up = h.chunk(2, dim=-1)  # (B, T, d_ff) each
            h = F.silu(self.hook_pre(gate)) * self.hook_pre_linear(up)
        else:  # a(W_1 x + b_1)
            h = _ELEMENTWISE[self.activation](self.hook_pre(h))
        h = self.hook_post(h)
        if self.training:  # dropout is the identity in eval mode
            h = self.dropout(h)
        return self.fc2(h)  # (B, T, C)
