"""Token-to-token circuits of a head and its copying score (Elhage et al. (2021), "A Mathematical
Framework for Transformer Circuits": the OV and QK circuits read from the token embedding).

    full OV circuit  W_E S W_U     (V × V_out): row i, the logits the head adds to the output
                                   when it attends to token i alone (h = A x S, A = e_i)
    full QK circuit  W_E Y W_Eᵀ    (V × V):     entry (i, j), the score of a query token i for
                                   a key token j (a = x Y xᵀ)

with S and Y the head's OV and QK matrices (glassformer.circuits.weights, "Brief Notes on
Transformers": h(x) = A(x) · x · S, A = softmax(x Y xᵀ)). W_E holds the token embeddings, one
row per token (× √E for a model with ``embed_scale``); W_U is the unembedding of the LM head
(glassformer.nn.embedding.Unembedding, (E, V_out)). For cross-attention the keys' and values'
tokens are the source's (the encoder's embedding) and the queries' the target's. Left out, as
Elhage et al. leave them out: the positional embeddings, every norm (the head's input norm, the
final norm, an MLM head's transform), the biases and all other layers: these are the direct
paths from a token through this one head. ``fold_ln=True`` folds the norms' gains in instead:
the head's input norm into S and Y (as ``ov_matrix``) and the final norm into W_U, the circuits
of TransformerLens's processed model (its default processing also centres W_U over the
vocabulary: ``center_unembed``). The default, False, keeps the weights as stored, as
``ov_matrix`` does. Both circuits stay factored (inner dimension D), so
V×V is never formed unless asked (``.full()``); ``tokens`` restricts rows and columns to ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ..models.heads import LMHead
from ._sites import model_stacks
from .factored import FactoredMatrix
from .weights import ov_matrix, qk_matrix, stack_module

__all__ = ["copying_score", "folded_unembedding", "full_ov_circuit", "full_qk_circuit"]
__all__ += ["token_embedding", "unembedding"]


def copying_score(matrix: FactoredMatrix | Tensor) -> Tensor:
    """Σ λ / Σ |λ| (real part) over the eigenvalues λ of a square matrix (...,): Elhage et al.'s
    eigenvalue positivity. Near 1 for a head whose OV circuit copies (token i raises logit i),
    near -1 for one that suppresses, about 0 for neither. Give the full OV circuit W_E S W_U
    or S itself, factored (eigenvalues from the small D×D matrix) or as a tensor. NaN for the
    zero matrix (no eigenvalue but 0)."""
    if isinstance(matrix, FactoredMatrix):
        lam = matrix.eigenvalues
    elif isinstance(matrix, Tensor) and matrix.dim() >= 2 and matrix.shape[-1] == matrix.shape[-2]:
        lam = torch.linalg.eigvals(matrix)
    else:
        raise ValueError(
            "copying_score needs a square FactoredMatrix or tensor (..., n, n), got "
            f"{type(matrix).__name__} of shape {tuple(getattr(matrix, 'shape', ()))}"
        )
    return (lam.sum(-1) / lam.abs().sum(-1)).real


def full_ov_circuit(
    model: nn.Module,
    layer: int | None,
    head: int | None = None,
    tokens: Sequence[int] | Tensor | None = None,
    *,
    kind: str = "self",
    stack: str | None = None,
    fold_ln: bool = False,
    center_unembed: bool = False,
) -> FactoredMatrix:
    """W_E S W_U (V × V_out, or len(tokens) × len(tokens)), factored: rows the source token a
    head attends to, columns the output logits it writes (see the module docstring).
    ``head=None``: every head, (H, ·, ·); ``layer=None``: every layer, (L, ·, ·, ·).

    ``fold_ln``: S with the gain of the head's input norm folded in (``ov_matrix(...,
    fold_ln=True)``) and W_U with the final norm's gain (``folded_unembedding``): the circuit
    of the normalised streams, as TransformerLens's model processed with ``fold_ln=True``.
    ``center_unembed``: W_U minus its mean over the vocabulary, each row (TransformerLens's
    ``center_unembed``, on in its default processing): every row of the circuit shifted by a
    constant, which changes no softmax but does change the copying score. Both True give
    ``W_E @ model.OV @ W_U`` of TransformerLens's default processed model."""
    ov = ov_matrix(model, layer, head, kind=kind, stack=stack, fold_ln=fold_ln)
    stack = _stack_name(model, stack)
    w_e = token_embedding(model, "encoder" if kind == "cross" else stack)  # (V, E)
    w_u = folded_unembedding(model, stack) if fold_ln else unembedding(model, stack)  # (E, V)
    if center_unembed:
        w_u = w_u - w_u.mean(-1, keepdim=True)
    if tokens is not None:
        w_e, w_u = w_e[_ids(tokens, w_e.shape[0])], w_u[:, _ids(tokens, w_u.shape[1])]
    return (w_e.to(ov.dtype) @ ov) @ w_u.to(ov.dtype)


def full_qk_circuit(
    model: nn.Module,
    layer: int | None,
    head: int | None = None,
    tokens: Sequence[int] | Tensor | None = None,
    *,
    kind: str = "self",
    stack: str | None = None,
    fold_ln: bool = False,
) -> FactoredMatrix:
    """W_E Y W_Eᵀ (V × V, or len(tokens) × len(tokens)), factored: rows the query token,
    columns the key token (for cross-attention: target query tokens, source key tokens).
    ``head=None``: every head, (H, ·, ·); ``layer=None``: every layer, (L, ·, ·, ·).
    ``fold_ln``: Y with the gain of the head's input norm folded in (``qk_matrix(...,
    fold_ln=True)``), as TransformerLens's processed model."""
    qk = qk_matrix(model, layer, head, kind=kind, stack=stack, fold_ln=fold_ln)
    stack = _stack_name(model, stack)
    w_q = token_embedding(model, stack)  # (V, E): the queries' tokens
    w_k = token_embedding(model, "encoder" if kind == "cross" else stack)  # the keys'
    if tokens is not None:
        w_q, w_k = w_q[_ids(tokens, w_q.shape[0])], w_k[_ids(tokens, w_k.shape[0])]
    return (w_q.to(qk.dtype) @ qk) @ w_k.mT.to(qk.dtype)


def token_embedding(model: nn.Module, stack: str | None = None) -> Tensor:
    """W_E (V, E): the token embeddings that enter ``stack``'s residual stream, one row per
    token, times the embedding's scale (√E with ``embed_scale``); detached."""
    token = stack_module(model, stack).embed  # the model's, or its encoder's or decoder's
    return token.weight.detach() * token.multiplier


def unembedding(model: nn.Module, stack: str | None = None) -> Tensor:
    """W_U (E, V_out): the LM head's unembedding (logits = h W_U + b), read from the end of
    ``stack``; detached. A ValueError for a model, or a stack, without an LM head."""
    stack = _stack_name(model, stack)
    feeds_head = stack == "decoder" or "decoder" not in model_stacks(model)
    if not isinstance(model, LMHead) or not feeds_head:
        raise ValueError(
            f"the {stack} of this {type(model).__name__} does not end in an LM head "
            "(unembedding): the full OV circuit needs a DecoderLM, an EncoderMLM or the decoder "
            "of an EncoderDecoder"
        )
    return model.unembed.proj.weight.detach().mT  # (E, V_out)


def folded_unembedding(model: nn.Module, stack: str | None = None) -> Tensor:
    """W_U (E, V_out) with the gain γ of the stack's final norm folded in, diag(γ) W_U, then
    centred over its E rows for a LayerNorm (whose output has mean 0): the unembedding that
    reads the normalised stream, as TransformerLens's ``fold_ln`` makes it. Unchanged when
    the stack has no final norm; a ValueError for a norm other than LayerNorm and RMSNorm."""
    from ..nn.norms import LayerNorm, RMSNorm

    w_u = unembedding(model, stack)
    norm = getattr(stack_module(model, stack), "ln_final", None)
    if norm is None:
        return w_u
    if not isinstance(norm, LayerNorm | RMSNorm):
        raise ValueError(
            f"fold_ln=True: the final norm is a {type(norm).__name__}; allowed a LayerNorm or "
            "RMSNorm"
        )
    w_u = w_u * norm.weight.detach()[:, None].to(w_u.dtype)
    return w_u - w_u.mean(0, keepdim=True) if isinstance(norm, LayerNorm) else w_u


def _stack_name(model: nn.Module, stack: str | None) -> str:
    module = stack_module(model, stack)  # validates
    return next(name for name, m in model_stacks(model).items() if m is module)


def _ids(tokens: Sequence[int] | Tensor, vocab: int) -> Tensor:
    ids = torch.as_tensor(tokens)
    if ids.dim() != 1 or ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"tokens must be a 1-D sequence of token ids, got {tokens!r}")
    if len(ids) and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"tokens must be ids in 0..{vocab - 1}, got {ids.tolist()}")
    return ids.long()
