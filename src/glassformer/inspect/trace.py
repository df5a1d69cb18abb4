"""A traced walk through a forward pass: every step in order, with its formula, shapes and
a few values.

    steps = trace(model, input_ids)          # list of Step
    print(format_trace(steps))               # formulas, shapes, values (readout.py)
    steps[-1].value                          # == model(input_ids).logits

The walk computes each formula itself from the model's weights (walk.py), in eval mode:
x^(0) = W_e[:, x[n]] + W_p[:, n], then per block the norm, Q/K/V (Eq. 4, Eq. 5 for cross-
attention), scores (Eq. 2), mask, softmax (Eq. 3), weighted sum (Eq. 1), output projection,
residual and feed-forward, then the final norm and the head. So its last value equals the
model's output (to float rounding), which the tests check.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..models import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM, EncoderModel
from ..models.inputs import key_mask, positions_from_mask
from ..nn.positional import LearnedPositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding
from .readout import format_values
from .walk import Step, Walker

__all__ = ["Step", "format_trace", "trace"]

LEGEND = "B batch, T length, S keys, C d_model, H heads, D head size, V vocabulary"


def trace(
    model,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    decoder_input_ids: Tensor | None = None,
    decoder_attention_mask: Tensor | None = None,
    token_type_ids: Tensor | None = None,
    layer: int | None = None,
) -> list[Step]:
    """The steps of ``model``'s forward pass on ``input_ids`` (B, T), in order.

    ``layer`` keeps only that block's steps (in every stack) besides the input and output
    steps. The last step's value is the model's ``logits`` (DecoderLM, EncoderMLM,
    EncoderClassifier, EncoderDecoder with ``decoder_input_ids``), or for an EncoderModel its
    ``pooled`` vector when it has a pooler, else its ``hidden_states``.
    """
    families = (DecoderLM, EncoderModel, EncoderDecoder)
    if not isinstance(model, families):
        allowed = ", ".join(f.__name__ for f in families)
        raise ValueError(f"trace: model is a {type(model).__name__}; allowed {allowed}")
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
        raise ValueError("trace: input_ids must be a (B, T) tensor of token ids")
    depth = max(len(m.layers) for m in _stacks(model))
    if layer is not None and (isinstance(layer, bool) or layer not in range(depth)):
        raise ValueError(f"layer={layer!r} is out of range: allowed 0..{depth - 1}")
    walk = Walker()
    with torch.no_grad():
        if isinstance(model, DecoderLM):
            _decoder_lm(walk, model, input_ids, attention_mask, layer)
        elif isinstance(model, EncoderModel):
            _encoder(walk, model, input_ids, attention_mask, token_type_ids, layer)
        else:
            target = (decoder_input_ids, decoder_attention_mask)
            _seq2seq(walk, model, input_ids, attention_mask, *target, layer)
    return walk.steps


def format_trace(steps: list[Step], values: bool = True) -> str:
    """The steps as text: number, place and name; the formula; each tensor's shape; with
    ``values``, a few numbers of each tensor at the last position and the last query's
    attention row in every head (see ``readout``)."""
    lines = [f"shapes: {LEGEND}", ""]
    for i, step in enumerate(steps, 1):
        lines.append(f"{i:3d}. {step.where} · {step.name}")
        lines.append(f"     {step.formula}")
        shapes = "  ".join(f"{name} {tuple(t.shape)}" for name, t in step.tensors.items())
        lines.append(f"     {shapes}")
        if values:
            lines += [f"     {line}" for line in format_values(step)]
    return "\n".join(lines)


# The three families ------------------------------------------------------------------------
def _decoder_lm(walk: Walker, model: DecoderLM, ids, attention_mask, layer) -> None:
    t = ids.shape[1]
    positions = positions_from_mask(attention_mask, t, 0, ids.device, model.config.max_len)
    mask, _ = key_mask(attention_mask)
    x, rope = _embed(walk, model.embed, ids, positions, "input")
    h = _stack(walk, model.decoder, "decoder", x, layer, mask=mask, causal=True, rope=rope)
    _lm_head(walk, model.head, h, model.config.activation)


def _encoder(walk: Walker, model: EncoderModel, ids, attention_mask, types, layer) -> None:
    positions = positions_from_mask(None, ids.shape[1], 0, ids.device, model.config.max_len)
    mask, real = key_mask(attention_mask)
    x, rope = _embed(walk, model.embed, ids, positions, "input", types)
    h = _stack(walk, model.encoder, "encoder", x, layer, mask=mask, causal=False, rope=rope)
    if isinstance(model, EncoderMLM):
        _lm_head(walk, model.head, h, model.config.activation)
    elif isinstance(model, EncoderClassifier):
        head = model.head
        v = _pool(walk, h, real, model.config.pooling)
        if head.pooler is not None:
            v = walk.emit("head", "pooler", "v ← tanh(W v + b)", v=_affine(v, head.pooler).tanh())
        logits = _affine(v, head.classifier)
        walk.emit(
            "head", "classifier", "logits = W_c v + b_c  (one score per class)", logits=logits
        )
    elif model.pooler is not None:
        v = _pool(walk, h, real, model.config.pooling)
        walk.emit(
            "head", "pooler", "pooled = tanh(W v + b)", pooled=_affine(v, model.pooler).tanh()
        )


def _seq2seq(walk: Walker, model: EncoderDecoder, src, src_mask, tgt, tgt_mask, layer) -> None:
    if tgt is None:
        raise ValueError("trace: an EncoderDecoder needs decoder_input_ids (B, T)")
    cfg = model.config
    memory_mask, _ = key_mask(src_mask)
    positions = positions_from_mask(None, src.shape[1], 0, src.device, cfg.max_len)
    x, rope = _embed(walk, model.src_embed, src, positions, "encoder input")
    z = _stack(walk, model.encoder, "encoder", x, layer, mask=memory_mask, causal=False, rope=rope)
    t = tgt.shape[1]
    positions = positions_from_mask(tgt_mask, t, 0, tgt.device, cfg.max_len)
    mask, _ = key_mask(tgt_mask)
    x, rope = _embed(walk, model.tgt_embed, tgt, positions, "decoder input")
    h = _stack(
        walk, model.decoder, "decoder", x, layer, mask=mask, causal=True, rope=rope,
        memory=z, memory_mask=memory_mask,
    )  # fmt: skip
    _lm_head(walk, model.head, h, model.config.activation)


# Input, stacks, heads --------------------------------------------------------------------------
def _embed(walk: Walker, emb, ids: Tensor, positions: Tensor, where: str, types=None):
    """x^(0) = W_e[:, x[n]] (· √D) + W_p[:, n] (+ W_s[:, s[n]]) (then Norm): (x, rope)."""
    x = emb.token.weight[ids]  # (B, T, C)
    formula = "x_n = W_e[:, x[n]]"
    if emb.token.multiplier != 1.0:
        x, formula = x * emb.token.multiplier, formula + " · √D"
    walk.emit(where, "token embedding", formula, X=x)
    pos, n = emb.pos, positions.to(ids.device) + emb.offset
    rope = None
    if isinstance(pos, SinusoidalPositionalEncoding):
        c = x.shape[-1]
        i = torch.arange(c, device=ids.device)
        angle = n[..., None].double() / pos.base ** ((i - i % 2).double() / c)  # (…, T, C)
        r = torch.where(i % 2 == 0, angle.sin(), angle.cos()).float().to(x.dtype)  # stored f32
        formula = (
            "x̃_n = x_n + r_n, r_n^(i) = sin(n / L^{i/D}) (i even), cos(n / L^{(i−1)/D}) (i odd)"
        )
        x = walk.emit(where, "positional encoding", formula, R=r.expand_as(x), X=x + r)
    elif isinstance(pos, LearnedPositionalEncoding):
        r = pos.weight[n]
        x = walk.emit(
            where, "positional encoding", "x̃_n = x_n + W_p[:, n]", R=r.expand_as(x), X=x + r
        )
    elif isinstance(pos, RotaryEmbedding):
        d = pos.cos.shape[-1]
        theta = pos.base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=ids.device) / d)
        angle = n[..., None].double() * theta  # (…, T, D/2)
        angle = torch.cat([angle, angle], dim=-1)
        cos, sin = (f(angle).float().to(x.dtype) for f in (torch.cos, torch.sin))  # stored f32
        if n.dim() == 2:
            cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D): broadcast over heads
        rope = (cos, sin)
        formula = "rotary (RoPE): nothing added; q and k are rotated by n·θ_j, θ_j = L^{−2j/D}"
        walk.emit(where, "positional encoding", formula, cos=cos, sin=sin)
    else:
        walk.emit(where, "positional encoding", "none: r_n = 0", X=x)
    if emb.segment is not None:
        seg = emb.segment.weight[torch.zeros_like(ids) if types is None else types]
        x = walk.emit(where, "segment embedding", "x_n ← x_n + W_s[:, s[n]]", X=x + seg)
    if emb.norm is not None:
        x = walk.norm(emb.norm, x, where, "embedding norm")
    return x, rope


def _stack(walk: Walker, stack, name: str, x: Tensor, layer, **kw) -> Tensor:
    kw.setdefault("memory", None)
    kw.setdefault("memory_mask", None)
    for i, block in enumerate(stack.layers):
        walk.show = layer is None or layer == i
        x = walk.block(block, x, f"{name}.layers.{i}", **kw)
    walk.show = True
    if stack.norm is not None:
        x = walk.norm(stack.norm, x, name, "final norm")
    return x


def _lm_head(walk: Walker, head, h: Tensor, activation: str) -> Tensor:
    if head.transform is not None:
        u, formula = walk.activate(activation, _affine(h, head.transform))
        h = walk.emit("head", "transform", f"X ← a(W X + b), {formula}", X=u)
        h = walk.norm(head.transform_norm, h, "head", "transform norm")
    formula = "logits = X W_uᵀ (+ b): one score per vocabulary entry (W_u = W_e when tied)"
    return walk.emit("head", "unembedding", formula, logits=_affine(h, head.unembed.proj))


def _pool(walk: Walker, h: Tensor, real: Tensor | None, pooling: str) -> Tensor:
    if pooling == "cls":
        return walk.emit("head", "pool", "v = x_0 (the first, <BOS>/CLS, position)", v=h[:, 0])
    w = (
        torch.ones(h.shape[:2], dtype=h.dtype, device=h.device)
        if real is None
        else real.to(h.dtype)
    )
    v = (h * w[..., None]).sum(1) / w.sum(1, keepdim=True).clamp(min=1.0)
    return walk.emit("head", "pool", "v = (1/|real|) Σ_n x_n over the real tokens", v=v)


def _affine(x: Tensor, linear) -> Tensor:
    y = x @ linear.weight.T
    return y if linear.bias is None else y + linear.bias


def _stacks(model) -> list:
    if isinstance(model, EncoderDecoder):
        return [model.encoder, model.decoder]
    return [model.decoder if isinstance(model, DecoderLM) else model.encoder]
