"""The layers bench_recurrence.py times, their steps, and what it records of them that is not a
time: parameters, sequential steps, maximum path length, multiply-adds per token.

Layers, all of width C = d_model, input and output (B, T, C), float32:

    attention   glassformer.nn.MultiHeadAttention(C, H), causal self-attention: the output at
                t sees the inputs <= t, as a one-directional recurrence does
    torch-mha   torch.nn.MultiheadAttention(C, H, batch_first=True) with the causal mask: the
                same layer as PyTorch writes it, the peer of glassformer's attention
    lstm        torch.nn.LSTM(C, C, batch_first=True), one layer
    gru         torch.nn.GRU(C, C, batch_first=True), one layer

Projections ("Transformer: Self-Attention and Parallelization", Multi-Head Attention: "the
fully connected layers before different heads can be merged into a large fully connected
layer"), x (B, T, C) -> the queries, keys and values of every head:

    merged      one Linear(C, 3C), [W^Q; W^K; W^V] for all heads (torch.nn's ``in_proj_weight``)
    per-head    H Linears(C, 3D), D = C / H: head h's [W^Q_h; W^K_h; W^V_h], one matmul each

A step is the forward pass and the backward pass of a fixed random gradient of the output
(of every output, for per-head) to the input and the weights.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from glassformer.nn import MultiHeadAttention

LAYERS = ("attention", "torch-mha", "lstm", "gru")
PROJECTIONS = ("merged", "per-head")
Forward = Callable[[Tensor], Tensor | list[Tensor]]


def build_layer(name: str, d_model: int, n_head: int) -> tuple[nn.Module, Forward]:
    """The layer ``name`` of width ``d_model`` and the call that maps x (B, T, C) to y."""
    if name == "attention":
        attn = MultiHeadAttention(d_model, n_head)
        return attn, lambda x: attn(x, causal=True)
    if name == "torch-mha":
        mha = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        masks: dict[int, Tensor] = {}  # T -> (T, T), -inf above the diagonal

        def forward(x: Tensor) -> Tensor:
            t = x.shape[1]
            mask = masks.setdefault(t, nn.Transformer.generate_square_subsequent_mask(t))
            return mha(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)[0]

        return mha, forward
    if name in ("lstm", "gru"):
        rnn = (nn.LSTM if name == "lstm" else nn.GRU)(d_model, d_model, batch_first=True)
        return rnn, lambda x: rnn(x)[0]  # the outputs h_1 .. h_T; the final state left out
    if name == "merged":
        proj = nn.Linear(d_model, 3 * d_model)
        return proj, proj
    if name == "per-head":
        heads = PerHeadProjection(d_model, n_head)
        return heads, heads
    raise KeyError(name)


class PerHeadProjection(nn.Module):
    """One Linear(C, 3D) per head: head h's queries, keys and values, ``n_head`` matmuls."""

    def __init__(self, d_model: int, n_head: int) -> None:
        super().__init__()
        d = d_model // n_head
        self.heads = nn.ModuleList(nn.Linear(d_model, 3 * d) for _ in range(n_head))

    def forward(self, x: Tensor) -> list[Tensor]:
        return [head(x) for head in self.heads]  # H of (B, T, 3D)

    @classmethod
    def from_merged(cls, proj: nn.Linear, n_head: int) -> PerHeadProjection:
        """The same projections as ``proj`` = [W^Q; W^K; W^V] (rows: Q of every head, then K,
        then V), regrouped by head: head h gets rows h·D .. (h+1)·D of each of the three."""
        c = proj.in_features
        d = c // n_head
        heads = cls(c, n_head)
        w = proj.weight.detach().view(3, n_head, d, c)  # (Q|K|V, H, D, C)
        b = proj.bias.detach().view(3, n_head, d)
        with torch.no_grad():
            for h, head in enumerate(heads.heads):
                head.weight.copy_(w[:, h].reshape(3 * d, c))
                head.bias.copy_(b[:, h].reshape(3 * d))
        return heads


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def sequential_steps(name: str, t: int) -> int:
    """Steps that must run one after another over a sequence of T: the recurrence's h_t needs
    h_{t-1}; attention computes every position at once."""
    return t if name in ("lstm", "gru") else 1


def max_path_length(name: str, t: int) -> int:
    """The most steps between an input at one position and an output at another: from x_1 to
    y_T a recurrence passes T - 1 hidden-to-hidden steps; attention joins them directly."""
    return t - 1 if name in ("lstm", "gru") else 1


def macs_per_token(name: str, d_model: int, t: int) -> int:
    """Forward multiply-adds per token of the layer: its weights' and, for causal attention,
    the scores QKᵀ and the sum AV over the (T + 1) / 2 keys a query sees on average."""
    c = d_model
    attention = 4 * c * c + (t + 1) * c
    return {"attention": attention, "torch-mha": attention, "lstm": 8 * c * c, "gru": 6 * c * c}[
        name
    ]


def make_step(module: nn.Module, forward: Forward, x: Tensor, seed: int = 1):
    """One step: the forward pass, then the backward pass of a fixed random output gradient to
    x and the weights; returns {"forward": seconds} (the paired run times the whole step)."""
    with torch.no_grad():
        y = forward(x)
    outputs = y if isinstance(y, list) else [y]
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(o.shape, generator=gen) for o in outputs]

    def step() -> dict[str, float]:
        x.grad = None
        module.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        y = forward(x)
        t1 = time.perf_counter()
        torch.autograd.backward(y if isinstance(y, list) else [y], grads)
        return {"forward": t1 - t0}

    return step


def make_input(batch: int, t: int, d_model: int, seed: int = 0) -> Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, t, d_model, generator=gen).requires_grad_(True)
