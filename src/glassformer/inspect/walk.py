"""The formulas of one block, written out step by step from the model's weights: the norm,
Eq. (4)/(5) projections, Eq. (2) scores, the mask, Eq. (3) softmax, Eq. (1) weighted sum, the
output projection, the residual connection and the feed-forward sub-layer.

Every step is computed here with plain tensor operations (no module's forward is called), in
eval mode (no dropout; BatchNorm uses its running statistics), and recorded as a ``Step``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ..nn import BatchNorm, LayerNorm, RMSNorm

__all__ = ["Step", "Walker"]


@dataclass(frozen=True)
class Step:
    """One step of the forward pass: where it happens (e.g. "decoder.layers.0.self_attn"),
    its name, its formula as the notes write it, and the tensors it produced (by name)."""

    where: str
    name: str
    formula: str
    tensors: dict[str, Tensor]

    @property
    def value(self) -> Tensor:
        """The step's result: its last tensor."""
        return list(self.tensors.values())[-1]


class Walker:
    """Records steps; ``show`` says whether the current block's steps are kept (``layer``)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.show = True

    def emit(self, where: str, name: str, formula: str, **tensors: Tensor) -> Tensor:
        if self.show:
            self.steps.append(
                Step(where, name, formula, {k: t.detach() for k, t in tensors.items()})
            )
        return list(tensors.values())[-1]

    # Norms -----------------------------------------------------------------------------------
    def norm(self, module, x: Tensor, where: str, name: str = "norm") -> Tensor:
        """LayerNorm, RMSNorm or BatchNorm (running statistics) by its formula."""
        if isinstance(module, LayerNorm):
            mu = x.mean(-1, keepdim=True)  # (B, T, 1)
            var = (x - mu).pow(2).mean(-1, keepdim=True)  # (B, T, 1)
            y = (x - mu) / torch.sqrt(var + module.eps) * module.weight
            y = y if module.bias is None else y + module.bias
            formula = (
                "LayerNorm: μ = (1/C) Σ_j x_j, σ² = (1/C) Σ_j (x_j − μ)², "
                "y = γ ⊙ (x − μ)/√(σ² + ε) + β"
            )
        elif isinstance(module, RMSNorm):
            y = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + module.eps) * module.weight
            formula = "RMSNorm: y = γ ⊙ x / √((1/C) Σ_j x_j² + ε)"
        elif isinstance(module, BatchNorm):
            y = (x - module.running_mean) / torch.sqrt(module.running_var + module.eps)
            y = y * module.weight + module.bias
            formula = "BatchNorm (eval): y_j = γ_j (x_j − μ_j)/√(σ²_j + ε) + β_j, μ, σ² running"
        else:
            raise ValueError(f"trace: norm {type(module).__name__} is not known")
        return self.emit(where, name, formula, X=y)

    # Attention ---------------------------------------------------------------------------------
    def attention(self, attn, x: Tensor, z: Tensor | None, mask, causal: bool, rope, where: str):
        """Multi-head attention of x (B, T, C) to z (B, S, C), or to x itself (z None)."""
        h, h_kv, d = attn.n_head, attn.n_kv_head, attn.head_dim
        (wq, bq), (wk, bk), (wv, bv) = attn.projection_weights()
        src = x if z is None else z
        q = _heads(_linear(x, wq, bq), h)  # (B, H, T, D)
        k, v = _heads(_linear(src, wk, bk), h_kv), _heads(_linear(src, wv, bv), h_kv)
        eq = "(Eq. 4)" if z is None else "(Eq. 5: Q from X, K and V from the encoder output Z)"
        zs = "X" if z is None else "Z"
        formula = f"Q = X W_Qᵀ + b_Q, K = {zs} W_Kᵀ + b_K, V = {zs} W_Vᵀ + b_V {eq}"
        formula += f"; split into H = {h} heads of D = {d}"
        if h_kv != h:
            formula += f"; K, V have {h_kv} heads, each shared by {h // h_kv} query heads (GQA)"
        self.emit(where, "Q, K, V projections", formula, Q=q, K=k, V=v)
        if rope is not None:
            cos, sin = rope
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
            formula = "RoPE: (x_j, x_{j+D/2}) of q_n and k_n rotated by the angle n·θ_j"
            self.emit(where, "rotary positions", formula, Q=q, K=k)
        if h_kv != h:
            k, v = k.repeat_interleave(h // h_kv, dim=1), v.repeat_interleave(h // h_kv, dim=1)
        a = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, S)
        self.emit(where, "scores", "a_nm = q_nᵀ k_m / √d_k  (Eq. 2)", a=a)
        allowed = _allowed(mask, causal, a.shape[-2], a.shape[-1], a.device)
        if allowed is None:
            self.emit(where, "mask", "no mask: b_nm = 0, every query sees every key", â=a)
        else:
            a = a.masked_fill(~allowed, float("-inf"))
            reasons = ["m > n (causal)"] if causal else []
            if mask is not None:
                reasons.append("key m is padding")
            formula = f"â_nm = a_nm + b_nm, b_nm = −∞ where {' or '.join(reasons)}, else 0"
            self.emit(where, "mask", formula, mask=allowed, â=a)
        dead = a.amax(-1, keepdim=True) == float("-inf")  # rows with nothing to see
        e = torch.exp(a.masked_fill(dead, 0.0) - a.masked_fill(dead, 0.0).amax(-1, keepdim=True))
        weights = (e / e.sum(-1, keepdim=True)).masked_fill(dead, 0.0)  # (B, H, T, S)
        formula = "A_nm = e^{â_nm} / Z_n, Z_n = Σ_m e^{â_nm}  (Eq. 3: softmax over each row)"
        self.emit(where, "softmax", formula, A=weights)
        y = weights @ v  # (B, H, T, D)
        formula = "head_i = A_i V_i, y_n = Σ_m A_nm v_m  (Eq. 1: Softmax(QKᵀ/√d_k) V)"
        self.emit(where, "weighted sum", formula, heads=y)
        b, _, t, _ = y.shape
        y = y.transpose(1, 2).reshape(b, t, h * d)  # (B, T, H·D): heads side by side
        out = _linear(y, attn.out_proj.weight, attn.out_proj.bias)
        formula = "MultiHead = Concat(head_1, …, head_H) W_Oᵀ + b_O"
        return self.emit(where, "output projection", formula, out=out)

    # Feed-forward ------------------------------------------------------------------------------
    def feedforward(self, ffn, x: Tensor, where: str) -> Tensor:
        hidden = _linear(x, ffn.fc1.weight, ffn.fc1.bias)  # (B, T, d_ff) or 2 d_ff for swiglu
        self.emit(where, "first layer", "H = X W_1ᵀ + b_1", H=hidden)
        act, formula = self.activate(ffn.activation, hidden)
        self.emit(where, "activation", formula, a=act)
        out = _linear(act, ffn.fc2.weight, ffn.fc2.bias)
        formula = "FeedForward(X) = W_2 a(W_1 X + b_1) + b_2"
        return self.emit(where, "second layer", formula, out=out)

    @staticmethod
    def activate(kind: str, hidden: Tensor) -> tuple[Tensor, str]:
        """The activation ``kind`` by its formula: (a(H), formula)."""
        if kind == "swiglu":
            gate, up = hidden.chunk(2, dim=-1)
            return gate * torch.sigmoid(gate) * up, "a = silu(H_gate) ⊙ H_up  (SwiGLU)"
        if kind == "relu":
            return hidden.clamp(min=0), "a(H) = max(0, H)  (ReLU)"
        if kind == "gelu":
            act = 0.5 * hidden * (1 + torch.erf(hidden / math.sqrt(2)))
            return act, "a(H) = H Φ(H) = ½ H (1 + erf(H/√2))  (GELU)"
        if kind == "gelu_tanh":
            inner = math.sqrt(2 / math.pi) * (hidden + 0.044715 * hidden.pow(3))
            act = 0.5 * hidden * (1 + torch.tanh(inner))
            return act, "a(H) = ½ H (1 + tanh(√(2/π)(H + 0.044715 H³)))  (GELU, tanh form)"
        raise ValueError(f"trace: activation {kind!r} is not known")

    # Blocks -----------------------------------------------------------------------------------
    def block(self, block, x: Tensor, where: str, *, memory, mask, memory_mask, causal, rope):
        """One EncoderBlock or DecoderBlock: each sub-layer inside residual + norm."""
        parts = [("self_attn", block.attn_norm, "self-attention")]
        if block.cross_attn is not None:
            parts.append(("cross_attn", block.cross_norm, "cross-attention"))
        parts.append(("ffn", block.ff_norm, "feed-forward"))
        for name, norm, title in parts:
            at = f"{where}.{name}"

            def sublayer(u: Tensor, name=name, at=at) -> Tensor:
                if name == "self_attn":
                    return self.attention(block.self_attn, u, None, mask, causal, rope, at)
                if name == "cross_attn":
                    return self.attention(block.cross_attn, u, memory, memory_mask, False, None, at)
                return self.feedforward(block.ffn, u, at)

            if block.norm_first:
                u = sublayer(self.norm(norm, x, at))
                x = self.emit(at, "residual", f"X ← X + {title}(Norm(X))  (pre-norm)", X=x + u)
            else:
                s = self.emit(at, "residual", f"X + {title}(X)", X=x + sublayer(x))
                x = self.norm(norm, s, at, name="norm (post-norm: X ← Norm(X + F(X)))")
        return x


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    y = x @ w.T
    return y if b is None else y + b


def _heads(u: Tensor, n: int) -> Tensor:
    b, t, c = u.shape
    return u.reshape(b, t, n, c // n).transpose(1, 2)  # (B, n, T, D)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def _allowed(mask: Tensor | None, causal: bool, t: int, s: int, device) -> Tensor | None:
    """The boolean mask (True = may attend) combining the given one and the causal one."""
    if causal:
        tri = torch.ones(t, s, dtype=torch.bool, device=device).tril(s - t)  # (T, S): m <= n
        return tri if mask is None else mask & tri
    return mask
