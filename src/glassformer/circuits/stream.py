"""The residual stream as a sum of labelled terms ("Brief Notes on Transformers": x0 from the
embedding, x1 = H(x0) + x0 with H(x) = Σ_j h_j(x), x2 = MLP(x1) + x1; Elhage et al. (2021), "A
Mathematical Framework for Transformer Circuits": every layer reads from and writes into one
stream, so the stream is the sum of everything written into it).

    decompose_resid(cache)            the final stream (before the final norm) as its terms
    decompose_resid(cache, layer=1)   the stream entering block 1
    accumulated_resid(cache)          the stream after each block, (L + 1, B, T, C)
    stack_head_results(cache)         each head's term, (L·H, B, T, C)

The terms and their labels: ``"embed"`` (token embedding), ``"pos_embed"`` (learned or
sinusoidal positions; none with rotary positions, which enter attention instead),
``"token_type_embed"`` (BERT's segments), for each block l ``"L{l}H{h}"`` (head h's term
z_h W^O_h of self-attention, the cache's ``hook_result``) and ``"L{l}.attn_bias"`` (b^O), in
an encoder-decoder's decoder ``"L{l}XH{h}"`` and ``"L{l}.cross_bias"`` (cross-attention), and
``"L{l}.mlp"`` (the feed-forward). A bias that the model does not have has no term.

Norms in the stream. In a post-norm block (BERT, BART, Vaswani: X ← Norm(X + F(X))) and after
BERT's and BART's embedding (``ln_embed``), a norm sits in the stream itself. Each one is frozen
at the scale it took in this run (glassformer.circuits.norms): every term written before it is
carried through its linear part, and its constant, when the norm has a β, adds one term:
``"ln_embed_bias"``, ``"L{l}.ln1_bias"`` (after attention), ``"L{l}.ln2_bias"`` (after
cross-attention in an encoder-decoder's decoder, after the feed-forward otherwise) or
``"L{l}.ln3_bias"`` (after the feed-forward of a block with cross-attention): β, or
BatchNorm's β − γ μ_run / σ_run. The final norm of a pre-norm stack is not in the stream (the
decomposition stops before it; glassformer.circuits.attribution reads through it). The terms
sum to the cache's stream to float rounding.

The cache must come from a pass in eval mode (dropout off): ``circuit_cache(model, ...)``, or
``model.eval()`` then ``model.run_with_cache(...)``.
"""

from __future__ import annotations

import re

import torch
from torch import Tensor

from ..models.hooked import ActivationCache
from .cached import StackView, model_of, require, stack_view
from .components import Components, stacked
from .norms import freeze_norm

__all__ = ["accumulated_resid", "decompose_resid", "stack_head_results"]

_EMBEDS = (
    ("embed", "hook_embed"),
    ("pos_embed", "hook_pos_embed"),
    ("token_type_embed", "hook_token_type_embed"),
)
NORM_MODES = (None, "frozen", "recompute")


def decompose_resid(
    cache: ActivationCache, *, stack: str | None = None, layer: int | None = None
) -> Components:
    """The residual stream entering block ``layer`` (None: the final stream, before the final
    norm) of ``stack`` (``"encoder"`` or ``"decoder"``; None: the decoder when there is one)
    as its labelled terms, values (N, B, T, C) (see the module docstring). ``.sum()`` is the
    stream: ``cache["blocks.{layer}.hook_resid_pre"]`` or the last block's ``hook_resid_post``."""
    view = stack_view(model_of(cache, "decompose_resid"), stack, "decompose_resid")
    layer = view.check_layer(layer, "decompose_resid")
    require(cache, _needed(view, layer), "decompose_resid")
    return _Walk(cache, view).run(layer)


def accumulated_resid(
    cache: ActivationCache,
    *,
    stack: str | None = None,
    layer: int | None = None,
    norm: str | None = None,
) -> Components:
    """The residual stream after each block: values (layer + 1, B, T, C), labels
    ``"embed"`` (the stream entering block 0) then ``"L{l}"`` (after block l), up to the
    stream entering ``layer`` (None: the final one).

    ``norm``: None, the streams as they are; ``"recompute"``, each through the final norm as
    if it were the final stream (its own mean and scale: the logit lens; TransformerLens 4's
    ``accumulated_resid(apply_ln=True)``, which recomputes the norm for each layer too);
    ``"frozen"``, each through the stack's final norm with its scale frozen at the final
    stream's (an affine map, the same for every layer: TransformerLens's
    ``apply_ln_to_stack`` with the cached scale, times the gain plus the bias). A post-norm
    stack has no final norm, and both leave it as it is. Either way the last entry is then
    the final norm's output, the model's ``hidden_states``."""
    what = "accumulated_resid"
    view = stack_view(model_of(cache, what), stack, what)
    layer = view.check_layer(layer, what)
    if norm not in NORM_MODES:
        raise ValueError(f"{what}: norm={norm!r}; allowed: {NORM_MODES}")
    n = len(view.blocks)
    final = n if norm == "frozen" and view.final_norm is not None else layer
    require(
        cache, [name for i in {*range(layer + 1), final} for name in stream_names(view, i)], what
    )
    streams = [stream_at(cache, view, i) for i in range(layer + 1)]
    out = Components(["embed"] + [f"L{i}" for i in range(layer)], torch.stack(streams))
    if norm is None or view.final_norm is None:
        return out
    if norm == "frozen":
        return out.apply(freeze_norm(view.final_norm, stream_at(cache, view, n)))
    return out.apply(lambda x: freeze_norm(view.final_norm, x)(x))


def stack_head_results(
    cache: ActivationCache,
    *,
    stack: str | None = None,
    layer: int | None = None,
    kind: str = "self",
) -> Components:
    """Each attention head's term in the residual stream entering ``layer`` (None: the final
    stream): values (L·H, B, T, C), labels ``"L{l}H{h}"`` (``kind="self"``) or ``"L{l}XH{h}"``
    (``kind="cross"``, an encoder-decoder's decoder), layer by layer. In a pre-norm stack
    these are the cache's ``hook_result``; in a post-norm one each is carried through the
    norms after it (frozen, see the module docstring), as in ``decompose_resid``."""
    pattern = {"self": r"L\d+H\d+", "cross": r"L\d+XH\d+"}
    if kind not in pattern:
        raise ValueError(f"stack_head_results: kind={kind!r}; allowed: {tuple(pattern)}")
    view = stack_view(model_of(cache, "stack_head_results"), stack, "stack_head_results")
    if kind == "cross" and not any(b.cross_attn is not None for b in view.blocks):
        raise ValueError(
            f"stack_head_results: kind='cross', but the {view.name} has no cross-attention "
            "(only an encoder-decoder's decoder has)"
        )
    terms = decompose_resid(cache, stack=stack, layer=layer)
    return terms.select(lambda label: re.fullmatch(pattern[kind], label) is not None)


class _Walk:
    """Reads the stream's terms from the cache, block by block, in the order they are written."""

    def __init__(self, cache: ActivationCache, view: StackView) -> None:
        self.cache, self.view = cache, view
        self.parts: list[tuple[list[str], Tensor]] = []

    def run(self, layer: int) -> Components:
        view, cache = self.view, self.cache
        embeds = [
            (label, view.prefix + hook) for label, hook in _EMBEDS if hasattr(view.embed, hook)
        ]
        for label, name in embeds:
            self.add([label], cache[name][None])
        if view.embed.ln_embed is not None:  # BERT, BART: x^(0) = Norm(W_e[:, x[n]] + W_p[:, n])
            self.through(view.embed.ln_embed, _embedding_sum(cache, view), "ln_embed_bias")
        for i in range(layer):
            self.block(i)
        return stacked(self.parts)

    def block(self, i: int) -> None:
        block, p, cache = self.view.blocks[i], self.view.block_prefix(i), self.cache
        post = not block.norm_first
        before = cache[f"{p}hook_resid_pre"] if post else None
        self.heads(block.attn, f"{p}attn.", f"L{i}H", f"L{i}.attn_bias")
        if post:  # X ← Norm(X + MultiHead(X))
            y = before + cache[f"{p}hook_attn_out"]
            self.through(block.ln1, y, f"L{i}.ln1_bias")
            before = cache[f"{p}hook_resid_mid"]
        if block.cross_attn is not None:
            self.heads(block.cross_attn, f"{p}cross_attn.", f"L{i}XH", f"L{i}.cross_bias")
            if post:
                y = before + cache[f"{p}hook_cross_attn_out"]
                self.through(block.ln2, y, f"L{i}.ln2_bias")
                before = cache[f"{p}hook_resid_mid_cross"]
        self.add([f"L{i}.mlp"], cache[f"{p}hook_mlp_out"][None])
        if post:
            y = before + cache[f"{p}hook_mlp_out"]
            ln = "ln2" if block.cross_attn is None else "ln3"
            self.through(block.ln_mlp, y, f"L{i}.{ln}_bias")

    def heads(self, attn, prefix: str, label: str, bias_label: str) -> None:
        """Σ_h z_h W^O_h + b^O: one term per head (hook_result (B, T, H, C)), one for b^O."""
        result = self.cache[f"{prefix}hook_result"]
        self.add([f"{label}{h}" for h in range(result.shape[2])], result.permute(2, 0, 1, 3))
        if attn.out_proj.bias is not None:
            self.add([bias_label], attn.out_proj.bias.detach().expand_as(result[:, :, 0])[None])

    def through(self, norm, y: Tensor, label: str) -> None:
        """Carry every term so far through ``norm`` frozen at its input ``y``; add its constant."""
        frozen = freeze_norm(norm, y)
        self.parts = [(labels, frozen.linear(values)) for labels, values in self.parts]
        if getattr(norm, "bias", None) is not None:  # RMSNorm has no β: no term
            self.add([label], frozen.constant.expand_as(y)[None])

    def add(self, labels: list[str], values: Tensor) -> None:
        self.parts.append((labels, values))


def _needed(view: StackView, layer: int) -> list[str]:
    """The hook points the decomposition up to ``layer`` reads."""
    names = [view.prefix + hook for _, hook in _EMBEDS if hasattr(view.embed, hook)]
    for i in range(layer):
        block, p = view.blocks[i], view.block_prefix(i)
        post = not block.norm_first
        names += [f"{p}attn.hook_result", f"{p}hook_mlp_out"]
        if post:
            names += [f"{p}hook_resid_pre", f"{p}hook_attn_out", f"{p}hook_resid_mid"]
        if block.cross_attn is not None:
            names.append(f"{p}cross_attn.hook_result")
            if post:
                names += [f"{p}hook_cross_attn_out", f"{p}hook_resid_mid_cross"]
    return names


def stream_names(view: StackView, layer: int) -> list[str]:
    """The points that hold the stream entering block ``layer`` (``len(blocks)``: the final
    stream, before the final norm)."""
    n = len(view.blocks)
    if layer < n:
        return [f"{view.block_prefix(layer)}hook_resid_pre"]
    if n:
        return [f"{view.block_prefix(n - 1)}hook_resid_post"]
    if view.embed.ln_embed is not None:
        return [f"{view.prefix}ln_embed.hook_normalized"]
    return [view.prefix + hook for _, hook in _EMBEDS if hasattr(view.embed, hook)]


def stream_at(cache: ActivationCache, view: StackView, layer: int) -> Tensor:
    """The stream entering block ``layer`` (``len(blocks)``: the final stream) as cached."""
    n = len(view.blocks)
    if layer < n:
        return cache[f"{view.block_prefix(layer)}hook_resid_pre"]
    if n:
        return cache[f"{view.block_prefix(n - 1)}hook_resid_post"]
    if view.embed.ln_embed is not None:
        return cache[f"{view.prefix}ln_embed.hook_normalized"]
    return _embedding_sum(cache, view)


def _embedding_sum(cache: ActivationCache, view: StackView) -> Tensor:
    """W_e[:, x[n]] + W_p[:, n] (+ W_s[:, segment[n]]), added in the model's order."""
    embeds = [view.prefix + hook for _, hook in _EMBEDS if hasattr(view.embed, hook)]
    x = cache[embeds[0]]
    for name in embeds[1:]:
        x = x + cache[name]
    return x
