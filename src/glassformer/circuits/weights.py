"""Each head's OV and QK matrices, in the row-vector convention of "Brief Notes on Transformers".

With x one row per token (T, E), a head of attention computes ("Brief Notes on Transformers",
"Attention Mechanism")

    h(x) = A(x) · x · S,      A(x) = softmax(x Y xᵀ + mask),
    S = W_V W_O  (E×D · D×E: the OV matrix),   Y = W_Q W_Kᵀ / √d_k  (E×D · D×E: the QK matrix),

both E×E of rank at most D = d_k, the head size (Elhage et al. (2021), "A Mathematical
Framework for Transformer Circuits", W_OV and W_QK, transposed to rows). ``ov_matrix`` and
``qk_matrix`` return them as FactoredMatrix (W_V, W_O) and (W_Q / √d_k, W_Kᵀ), never forming the
E×E matrix. In torch's layout (``y = x Wᵀ + b``) head h's W_Q is the transpose of the rows
h·D … (h+1)·D - 1 of ``q_proj.weight`` (``projection_weights``) and W_O the transpose of the columns
h·D … (h+1)·D - 1 of ``out_proj.weight``. TransformerLens's ``model.QK`` is W_Q W_Kᵀ without
the 1/√d_k; its ``model.OV`` is S. Both as TransformerLens loads a model without processing
(``no_processing=True``); by default it folds the norm's gain into W_Q, W_K, W_V
(``fold_ln``: ``fold_ln=True`` here gives those) and centres the writing weights W_O
(``center_writing_weights``, which glassformer does not do).

What S and Y leave out:

* **Biases.** With them, the head's term is h(x) = A (x S) + (A 1) b_V W_O, and A 1 = 1 on every
  row that attends to a key, so the value bias adds the constant row b_V W_O (``ov_bias``);
  the scores are a_nm = x_n Y x_mᵀ + x_n · u + x_m · w + c with u = W_Q b_Kᵀ / √d_k (the same
  for every key, so it leaves A unchanged), w = W_K b_Qᵀ / √d_k and c = b_Q · b_K / √d_k
  (``qk_bias``). The output bias b^O belongs to the layer, not to a head.
* **Norms.** x is what the attention reads: the norm's output in a pre-norm block, the stream
  itself in a post-norm block; for cross-attention the keys and values come from the encoder's
  output Z (x_m a row of Z, x_n of the decoder's stream), so a_nm = x_n Y z_mᵀ and h = A (Z S).
* **Rotary positions.** q_n and k_m are rotated by their positions' angles between the two
  factors: a_nm = x_n W_Q R_{m-n} W_Kᵀ x_mᵀ / √d_k, so Y is the bilinear form with no rotation
  (the score of a query and key at the same position). Additive positional encodings are part
  of x and need nothing.
* **Grouped-query attention.** With H_kv < H key/value heads, query head h reads key/value head
  h // (H / H_kv) (glassformer.nn.multihead): W_K and W_V are that head's.

Heads are addressed as (layer, head); ``kind="self"`` or ``"cross"`` (the decoder blocks of an
encoder-decoder); ``stack="encoder"`` or ``"decoder"`` (default: the decoder when the model has
one). ``head=None`` gives every head, batched: (H, E, E); ``layer=None`` every layer of the
stack: (L, H, E, E), TransformerLens's ``model.OV`` layout.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ..nn import MultiHeadAttention
from ..nn.lora import effective_weight
from ._sites import model_stacks
from .factored import FactoredMatrix

__all__ = [
    "HeadWeights",
    "QKBias",
    "attention_layer",
    "fold_norm",
    "head_weights",
    "ov_bias",
    "ov_matrix",
    "qk_bias",
    "qk_matrix",
    "stack_module",
]

KINDS = ("self", "cross")
STACKS = ("encoder", "decoder")


class HeadWeights(NamedTuple):
    """One head's (or every head's, with a leading H) weights in the row convention:
    q = x W_Q + b_Q, k = x W_K + b_K, v = x W_V + b_V, the head's term z W_O."""

    W_Q: Tensor  # (..., E, D)
    W_K: Tensor  # (..., E, D): key/value head h // (H / H_kv)
    W_V: Tensor  # (..., E, D)
    W_O: Tensor  # (..., D, E)
    b_Q: Tensor  # (..., D), zeros without biases
    b_K: Tensor  # (..., D)
    b_V: Tensor  # (..., D)


class QKBias(NamedTuple):
    """The bias terms of the scores: a_nm = x_n Y x_mᵀ + x_n · query + x_m · key + const."""

    query: Tensor  # (..., E): W_Q b_Kᵀ / √d_k, the same for every key (A does not change)
    key: Tensor  # (..., E): W_K b_Qᵀ / √d_k
    const: Tensor  # (...,): b_Q · b_K / √d_k


def ov_matrix(
    model: nn.Module,
    layer: int | None,
    head: int | None = None,
    *,
    kind="self",
    stack=None,
    fold_ln: bool = False,
) -> FactoredMatrix:
    """S = W_V W_O (E×E, rank ≤ D) of head ``head`` of ``layer``, factored: h(x) = A (x S)
    + b_V W_O ("Brief Notes on Transformers"; Elhage et al.'s W_OV). ``head=None``: (H, E, E);
    ``layer=None``: (L, …) over the stack's layers. ``fold_ln``: the norm's gain folded in
    (see ``fold_norm``), as TransformerLens's ``model.OV`` of a model loaded with
    ``fold_ln=True``; without it, S equals ``model.OV`` of one loaded without processing."""
    w = head_weights(model, layer, head, kind=kind, stack=stack)
    if fold_ln:
        w = fold_norm(model, layer, w, kind=kind, stack=stack)
    return FactoredMatrix(w.W_V, w.W_O)


def qk_matrix(
    model: nn.Module,
    layer: int | None,
    head: int | None = None,
    *,
    kind="self",
    stack=None,
    fold_ln: bool = False,
) -> FactoredMatrix:
    """Y = W_Q W_Kᵀ / √d_k (E×E, rank ≤ D), factored: the scores are x_n Y x_mᵀ plus the bias
    terms of ``qk_bias`` (no rotation for rotary positions; see the module docstring).
    ``head=None``: (H, E, E); ``layer=None``: (L, …) over the stack's layers. ``fold_ln``: as
    for ``ov_matrix`` (TransformerLens's ``model.QK`` is √d_k Y)."""
    w = head_weights(model, layer, head, kind=kind, stack=stack)
    if fold_ln:
        w = fold_norm(model, layer, w, kind=kind, stack=stack)
    return FactoredMatrix(w.W_Q / math.sqrt(w.W_Q.shape[-1]), w.W_K.mT)


def fold_norm(
    model: nn.Module, layer: int | None, w: HeadWeights, *, kind="self", stack=None
) -> HeadWeights:
    """``w`` with the gain γ of the norm before the attention of a pre-norm block folded into
    W_Q, W_K, W_V (diag(γ) W), each then centred over its E rows for a LayerNorm (which
    subtracts the mean of x): the weights that read the normalised stream (x − μ)/s, or x/s
    for RMSNorm, directly, as TransformerLens's ``fold_ln`` makes them. The biases are left
    as they are. Refused for a post-norm block (its attention reads the stream, there is no
    norm before it) and for cross-attention."""
    from ..nn.norms import LayerNorm, RMSNorm

    blocks = stack_module(model, stack).blocks
    layers = range(len(blocks)) if layer is None else [layer]
    gains = []
    for i in layers:
        block = blocks[i]
        if kind != "self" or not block.norm_first:
            raise ValueError(
                f"fold_ln=True: block {i}'s {kind}-attention has no norm of its own before it "
                "to fold (folding is for the self-attention of a pre-norm block); use "
                "fold_ln=False"
            )
        if not isinstance(block.ln1, LayerNorm | RMSNorm):
            raise ValueError(
                f"fold_ln=True: block {i}'s norm is a {type(block.ln1).__name__}; allowed a "
                "LayerNorm or RMSNorm"
            )
        gains.append(block.ln1.weight.detach())
    gain = (gains[0] if layer is not None else torch.stack(gains))[..., None]  # ([L,] E, 1)
    if w.W_Q.dim() == gain.dim() + 1:  # every head: (…, H, E, D)
        gain = gain.unsqueeze(-3)
    center = isinstance(blocks[layers[0]].ln1, LayerNorm)

    def fold(weight: Tensor) -> Tensor:
        weight = weight * gain
        return weight - weight.mean(-2, keepdim=True) if center else weight

    return w._replace(W_Q=fold(w.W_Q), W_K=fold(w.W_K), W_V=fold(w.W_V))


def ov_bias(
    model: nn.Module, layer: int | None, head: int | None = None, *, kind="self", stack=None
) -> Tensor:
    """b_V W_O (E,) or (H, E): the row each head adds at every position that attends to a key
    (the rows of A sum to 1), beside A (x S). Zeros for a model without biases."""
    w = head_weights(model, layer, head, kind=kind, stack=stack)
    return (w.b_V[..., None, :] @ w.W_O).squeeze(-2)


def qk_bias(
    model: nn.Module, layer: int | None, head: int | None = None, *, kind="self", stack=None
) -> QKBias:
    """The scores' bias terms (QKBias): a_nm = x_n Y x_mᵀ + x_n · query + x_m · key + const."""
    w = head_weights(model, layer, head, kind=kind, stack=stack)
    scale = math.sqrt(w.W_Q.shape[-1])
    query = (w.W_Q @ w.b_K[..., None]).squeeze(-1) / scale  # (..., E)
    key = (w.W_K @ w.b_Q[..., None]).squeeze(-1) / scale
    return QKBias(query, key, (w.b_Q * w.b_K).sum(-1) / scale)


def head_weights(
    model: nn.Module, layer: int | None, head: int | None = None, *, kind="self", stack=None
) -> HeadWeights:
    """W_Q, W_K, W_V (E, D), W_O (D, E) and the biases of one head, or of every head with a
    leading (H,) when ``head`` is None, of every layer with a leading (L,) when ``layer`` is
    None; detached from autograd, the model's dtype."""
    if layer is None:
        n_layer = len(stack_module(model, stack).blocks)
        if n_layer == 0:
            raise ValueError(f"layer=None: the {stack or 'model'}'s stack has no layers")
        per_layer = [head_weights(model, i, head, kind=kind, stack=stack) for i in range(n_layer)]
        return HeadWeights(*(torch.stack(parts) for parts in zip(*per_layer, strict=True)))
    attn = attention_layer(model, layer, kind=kind, stack=stack)
    n, n_kv, d = attn.n_head, attn.n_kv_head, attn.head_dim
    heads = _heads(head, n)
    kv = heads // (n // n_kv)  # the key/value head each query head reads
    (wq, bq), (wk, bk), (wv, bv) = attn.projection_weights()

    def by_head(weight: Tensor, count: int, rows: Tensor) -> Tensor:
        return weight.detach().view(count, d, -1).mT[rows]  # (..., E, D)

    def bias(b: Tensor | None, count: int, rows: Tensor) -> Tensor:
        if b is None:
            return wq.new_zeros((*rows.shape, d))
        return b.detach().view(count, d)[rows]  # (..., D)

    w_o = effective_weight(attn.out_proj).detach()  # W^O (+ LoRA's update)
    w_o = w_o.view(w_o.shape[0], n, d).permute(1, 2, 0)[heads]  # (..., D, E)
    return HeadWeights(
        by_head(wq, n, heads),
        by_head(wk, n_kv, kv),
        by_head(wv, n_kv, kv),
        w_o,
        bias(bq, n, heads),
        bias(bk, n_kv, kv),
        bias(bv, n_kv, kv),
    )


def attention_layer(
    model: nn.Module, layer: int, *, kind: str = "self", stack: str | None = None
) -> MultiHeadAttention:
    """The MultiHeadAttention of block ``layer`` of ``stack``: its self- or cross-attention."""
    blocks = stack_module(model, stack).blocks
    if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer < len(blocks):
        raise ValueError(
            f"layer must be an int in 0..{len(blocks) - 1} (or None for every layer, where "
            f"allowed), got {layer!r}"
        )
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    attn = blocks[layer].attn if kind == "self" else blocks[layer].cross_attn
    if attn is None:
        raise ValueError(
            f"kind='cross': block {layer} has no cross-attention (only the decoder blocks of an "
            "encoder-decoder model have one); use kind='self'"
        )
    return attn


def stack_module(model: nn.Module, stack: str | None = None) -> nn.Module:
    """What holds the ``blocks`` of the model's ``encoder`` or ``decoder`` stack (default: the
    decoder when it has one): an encoder-decoder's ``encoder`` / ``decoder``, or the model
    itself for a DecoderLM ("decoder") or an EncoderModel ("encoder")."""
    stacks = model_stacks(model)
    if stack is None:
        stack = "decoder" if "decoder" in stacks else "encoder"
    if stack not in STACKS:
        raise ValueError(f"stack must be one of {STACKS} or None, got {stack!r}")
    if stack not in stacks:
        raise ValueError(
            f"stack={stack!r}: this {type(model).__name__} has no {stack}; it has {list(stacks)}"
        )
    return stacks[stack]


def _heads(head: int | None, n_head: int) -> Tensor:
    """The head numbers as an index: a 0-d tensor for one head, (H,) for all."""
    if head is None:
        return torch.arange(n_head)
    if not isinstance(head, int) or isinstance(head, bool) or not 0 <= head < n_head:
        raise ValueError(f"head must be None or an int in 0..{n_head - 1}, got {head!r}")
    return torch.tensor(head)
