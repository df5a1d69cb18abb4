"""The steps of a trace, read from one cached forward pass: each step pairs a formula of the
notes with the tensors the model computed for it, found at its hook points.

The embedding (x_n = W_e[:, x[n]] + r_n), the norm, Eq. (4)/(5) projections, Eq. (2) scores
with the mask, Eq. (3) softmax, Eq. (1) weighted sum, the output projection, the residual
connection, the feed-forward sub-layer and the heads. Where a step's value is the sum of two
hooked tensors (x_n + r_n, post-norm's X + F(X)), it is that sum, the addition the model
makes; nothing else is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..nn import BatchNorm, HookPoint, LayerNorm, RMSNorm
from ..nn.positional import LearnedPositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding

__all__ = ["Masking", "Step", "Steps"]

NORMS = {
    LayerNorm: "LayerNorm: μ = (1/C) Σ_j x_j, σ² = (1/C) Σ_j (x_j − μ)², "
    "y = γ ⊙ (x − μ)/√(σ² + ε) + β",
    RMSNorm: "RMSNorm: y = γ ⊙ x / √((1/C) Σ_j x_j² + ε)",
    BatchNorm: "BatchNorm (eval): y_j = γ_j (x_j − μ_j)/√(σ²_j + ε) + β_j, μ, σ² running",
}
ACTIVATIONS = {
    "swiglu": "a = silu(u_gate) ⊙ u_up  (SwiGLU)",
    "relu": "a(u) = max(0, u)  (ReLU)",
    "gelu": "a(u) = u Φ(u) = ½ u (1 + erf(u/√2))  (GELU)",
    "gelu_tanh": "a(u) = ½ u (1 + tanh(√(2/π)(u + 0.044715 u³)))  (GELU, tanh form)",
}


@dataclass(frozen=True)
class Step:
    """One step of the forward pass: where it happens (the path of the sub-layer or module,
    as its hook points are named, e.g. "blocks.0.attn", "decoder.blocks.0.cross_attn"), its
    name, its formula as the notes write it, and the tensors it produced (by name)."""

    where: str
    name: str
    formula: str
    tensors: dict[str, Tensor]

    @property
    def value(self) -> Tensor:
        """The step's result: its last tensor."""
        return list(self.tensors.values())[-1]


@dataclass(frozen=True)
class Masking:
    """What an attention's mask is made of: the causal rule, and a key (padding) mask."""

    causal: bool
    keys: bool


class Steps:
    """Builds the steps from ``cache`` (an ActivationCache) and ``read`` (the tensors no hook
    point holds, by module); only block ``layer``'s steps are kept when it is not None."""

    def __init__(self, cache, read: dict, layer: int | None) -> None:
        self.cache, self.read, self.layer = cache, read, layer
        self.steps: list[Step] = []
        self.show = True  # are the current block's steps kept?

    def at(self, point: HookPoint) -> Tensor:
        """The tensor that passed ``point``."""
        return self.cache[point.name]

    def emit(self, where: str, name: str, formula: str, **tensors: Tensor) -> Tensor:
        if self.show:
            self.steps.append(Step(where, name, formula, tensors))
        return list(tensors.values())[-1]

    # Input -----------------------------------------------------------------------------------
    def embed(self, emb, where: str) -> None:
        """x^(0) = W_e[:, x[n]] (· √C) + W_p[:, n] (+ W_s[:, s[n]]) (then Norm); ``emb``: the
        model or side that holds the input embedding (models.inputs.InputEmbedding)."""
        x = self.at(emb.hook_embed)  # (B, T, C)
        formula = "x_n = W_e[:, x[n]]" + (" · √C" if emb.embed.multiplier != 1.0 else "")
        self.emit(where, "token embedding", formula, X=x)
        pos = emb.pos_embed
        if isinstance(pos, SinusoidalPositionalEncoding | LearnedPositionalEncoding):
            r = self.at(emb.hook_pos_embed)  # (B, T, C)
            formula = (
                f"x̃_n = x_n + r_n, {pos.formula}"
                if isinstance(pos, SinusoidalPositionalEncoding)
                else "x̃_n = x_n + W_p[:, n]"
            )
            x = self.emit(where, "positional encoding", formula, R=r, X=x + r)
        elif isinstance(pos, RotaryEmbedding):
            cos, sin = self.read[emb]  # (T, D), or (B, 1, T, D) for per-example positions
            formula = "rotary (RoPE): nothing added; q, k rotated by n·θ_j, θ_j = base^{−2j/D}"
            self.emit(where, "positional encoding", formula, cos=cos, sin=sin)
        else:
            self.emit(where, "positional encoding", "none: r_n = 0", X=x)
        if emb.token_type_embed is not None:
            s = self.at(emb.hook_token_type_embed)
            x = self.emit(where, "segment embedding", "x_n ← x_n + W_s[:, s[n]]", X=x + s)
        if emb.ln_embed is not None:
            self.norm(emb.ln_embed, where, "embedding norm")

    def norm(self, module, where: str, name: str = "norm") -> Tensor:
        """LayerNorm, RMSNorm or BatchNorm (running statistics): its output."""
        return self.emit(where, name, NORMS[type(module)], X=self.at(module.hook_normalized))

    # Stacks and blocks -------------------------------------------------------------------------
    def stack(self, stack, name: str, masking: Masking, cross: Masking | None = None) -> None:
        """``stack``: what holds ``blocks`` and ``ln_final``, at the path ``name`` ("" for the
        model itself, "encoder" or "decoder" of an encoder-decoder)."""
        prefix = f"{name}." if name else ""
        for i, block in enumerate(stack.blocks):
            self.show = self.layer is None or self.layer == i
            self.block(block, f"{prefix}blocks.{i}", masking, cross)
        self.show = True
        if stack.ln_final is not None:
            self.norm(stack.ln_final, f"{prefix}ln_final", "final norm")

    def block(self, block, where: str, masking: Masking, cross: Masking | None) -> None:
        """One EncoderBlock or DecoderBlock: each sub-layer inside residual + norm."""
        parts = [("attn", block.ln1, block.hook_attn_out, block.hook_resid_mid, masking)]
        if block.cross_attn is not None:
            parts.append(
                ("cross_attn", block.ln2, block.hook_cross_attn_out,
                 block.hook_resid_mid_cross, cross or Masking(False, False))
            )  # fmt: skip
        parts.append(("mlp", block.ln_mlp, block.hook_mlp_out, block.hook_resid_post, None))
        x = self.at(block.hook_resid_pre)
        for name, norm, out, after, mask in parts:
            at = f"{where}.{name}"
            title = TITLES[name]
            if block.norm_first:
                self.norm(norm, at)
            if name == "mlp":
                self.feedforward(block.mlp, out, at)
            else:
                self.attention(getattr(block, name), out, at, mask, cross=name == "cross_attn")
            if block.norm_first:
                formula = f"X ← X + {title}(Norm(X))  (pre-norm)"
                self.emit(at, "residual", formula, X=self.at(after))
            else:
                self.emit(at, "residual", f"X + {title}(X)", X=x + self.at(out))
                self.norm(norm, at, name="norm (post-norm: X ← Norm(X + F(X)))")
            x = self.at(after)

    # Attention ---------------------------------------------------------------------------------
    def attention(self, attn, out: HookPoint, where: str, masking: Masking, cross: bool) -> None:
        """Multi-head attention; ``out`` is the block's hook point on its output."""
        h, h_kv, d = attn.n_head, attn.n_kv_head, attn.head_dim
        q, k, v = (self._heads(p) for p in (attn.hook_q, attn.hook_k, attn.hook_v))
        eq = "(Eq. 5: Q from X, K and V from the encoder output Z)" if cross else "(Eq. 4)"
        zs = "Z" if cross else "X"
        formula = {
            "separate": f"Q = X W_Qᵀ + b_Q, K = {zs} W_Kᵀ + b_K",
            "shared": f"Q = X W_QKᵀ + b_QK, K = {zs} W_QKᵀ + b_QK (one shared projection U)",
            "dot": f"Q = X, K = {zs} (no query/key parameters: scores xᵀx′)",
        }[attn.scores]
        formula += f", V = {zs} W_Vᵀ + b_V {eq}"
        formula += f"; split into H = {h} heads of D = {d}"
        if h_kv != h:
            formula += f"; K, V have {h_kv} heads, each shared by {h // h_kv} query heads (GQA)"
        self.emit(where, "Q, K, V projections", formula, Q=q, K=k, V=v)
        if attn.hook_rot_q.name in self.cache:
            formula = "RoPE: (x_j, x_{j+D/2}) of q_n and k_n rotated by the angle n·θ_j"
            q, k = self._heads(attn.hook_rot_q), self._heads(attn.hook_rot_k)
            self.emit(where, "rotary positions", formula, Q=q, K=k)
        a = self.at(attn.hook_attn_scores)  # (B, H, T, S): â = a + b
        if not (masking.causal or masking.keys):
            self.emit(where, "scores", "a_nm = q_nᵀ k_m / √d_k  (Eq. 2)", a=a)
            self.emit(where, "mask", "no mask: b_nm = 0, every query sees every key", â=a)
        else:
            formula = (
                "a_nm = q_nᵀ k_m / √d_k  (Eq. 2), computed with the mask b_nm of the next step "
                "added: â_nm = a_nm + b_nm"
            )
            self.emit(where, "scores", formula, â=a)
            reasons = ["m > n (causal)"] if masking.causal else []
            if masking.keys:
                reasons.append("key m is padding")
            formula = f"â_nm = a_nm + b_nm, b_nm = −∞ where {' or '.join(reasons)}, else 0"
            mask = _as_built(self.at(attn.hook_mask), masking)
            self.emit(where, "mask", formula, mask=mask, â=a)
        formula = "A_nm = e^{â_nm} / Z_n, Z_n = Σ_m e^{â_nm}  (Eq. 3: softmax over each row)"
        self.emit(where, "softmax", formula, A=self.at(attn.hook_pattern))
        formula = "head_i = A_i V_i, y_n = Σ_m A_nm v_m  (Eq. 1: Softmax(QKᵀ/√d_k) V)"
        self.emit(where, "weighted sum", formula, heads=self._heads(attn.hook_z))
        formula = "MultiHead = Concat(head_1, …, head_H) W_Oᵀ + b_O"
        self.emit(where, "output projection", formula, out=self.at(out))

    def _heads(self, point: HookPoint) -> Tensor:
        """A hook point's (B, T, H, D) tensor as (B, H, T, D), the notes' one matrix per head."""
        return self.at(point).transpose(1, 2)

    # Feed-forward and heads --------------------------------------------------------------------
    def feedforward(self, mlp, out: HookPoint, where: str) -> None:
        hidden = self.at(mlp.hook_pre)  # (B, T, d_ff)
        if mlp.activation == "swiglu":  # W_1 = [W_gate; W_up]: u = [u_gate, u_up]
            hidden = torch.cat([hidden, self.at(mlp.hook_pre_linear)], dim=-1)
        self.emit(where, "first layer", "u = X W_1ᵀ + b_1", u=hidden)
        self.emit(where, "activation", ACTIVATIONS[mlp.activation], a=self.at(mlp.hook_post))
        formula = "FeedForward(X) = W_2 a(W_1 X + b_1) + b_2"
        self.emit(where, "second layer", formula, out=self.at(out))

    def lm_head(self, head, activation: str) -> None:
        """``head``: the model that holds the unembedding (models.heads.LMHead)."""
        if head.transform is not None:
            u = self.at(head.hook_transform)  # a(W h + b)
            self.emit("head", "transform", f"X ← a(W X + b), {ACTIVATIONS[activation]}", X=u)
            self.norm(head.transform_norm, "head", "transform norm")
        formula = "logits = X W_uᵀ (+ b): one score per vocabulary entry (W_u = W_e when tied)"
        self.emit("head", "unembedding", formula, logits=self.at(head.hook_logits))

    def pool(self, point: HookPoint, pooling: str) -> None:
        """The pooled vector v, before any pooler (``point``: the head's hook_pool)."""
        v = self.at(point)
        if pooling == "cls":
            self.emit("head", "pool", "v = x_first (the first real token, <BOS>/CLS)", v=v)
        elif pooling == "last":
            self.emit("head", "pool", "v = x_last (the last real token)", v=v)
        else:
            self.emit("head", "pool", "v = (1/|real|) Σ_n x_n over the real tokens", v=v)


TITLES = {"attn": "self-attention", "cross_attn": "cross-attention", "mlp": "feed-forward"}


def _as_built(mask: Tensor, masking: Masking) -> Tensor:
    """The hooked (B, H, T, S) mask with the dimensions it is the same along kept once, as it
    was built: (T, S) causal only, (B, 1, 1, S) keys only, (B, 1, T, S) both; bool."""
    allowed = mask if mask.dtype == torch.bool else mask > float("-inf")
    if not masking.keys:
        return allowed[0, 0]  # the causal rule: the same for every example and head
    return allowed[:, :1] if masking.causal else allowed[:, :1, :1]
