"""What the circuit analyses read: a cache of one forward pass, the model that made it, and the
stack of blocks (encoder or decoder) whose residual stream they take apart.

    out, cache = circuit_cache(model, input_ids)      # eval mode, the points the analyses read
    out, cache = model.run_with_cache(input_ids)      # every point: the same, and more

The residual stream's terms are read from the hook points (docs/guide/hooks.md): the
embeddings, each head's term ``hook_result`` (computed only when cached), what each sub-layer
writes, and the stream between sub-layers (for the norms of a post-norm block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..models.base import eval_mode
from ..models.decoder import DecoderLM
from ..models.decoder_classifier import DecoderClassifier
from ..models.encoder import EncoderModel
from ..models.encoder_decoder import EncoderDecoder
from ..models.hooked import ActivationCache

__all__ = ["CIRCUIT_HOOKS", "StackView", "circuit_cache", "circuit_names", "model_of", "stack_view"]

# the last part of every hook point name the circuit analyses read
CIRCUIT_HOOKS = (
    "hook_embed",
    "hook_pos_embed",
    "hook_token_type_embed",
    "hook_normalized",
    "hook_resid_pre",
    "hook_resid_mid",
    "hook_resid_mid_cross",
    "hook_resid_post",
    "hook_result",
    "hook_attn_out",
    "hook_cross_attn_out",
    "hook_mlp_out",
    "hook_logits",
)


def circuit_names(name: str) -> bool:
    """Is ``name`` a hook point the circuit analyses read? (a filter for ``run_with_cache``)"""
    return name.rpartition(".")[2] in CIRCUIT_HOOKS


def circuit_cache(model: nn.Module, *args: Any, **kwargs: Any) -> tuple[Any, ActivationCache]:
    """``model.run_with_cache(*args, names=circuit_names, **kwargs)`` in eval mode (no
    dropout; the model's mode is restored after) and without gradients: the output and a
    cache with every point glassformer.circuits reads. The attention scores and pattern are
    not cached, so attention keeps its fused kernel."""
    with eval_mode(model), torch.no_grad():
        return model.run_with_cache(*args, names=circuit_names, **kwargs)


@dataclass
class StackView:
    """One stack of a model: its ``name`` (``"encoder"`` / ``"decoder"``), the ``prefix`` of its
    hook point names (``""``, ``"encoder."``, ``"decoder."``), ``embed`` what holds its input
    embedding (glassformer.models.inputs.InputEmbedding: the model itself, or an
    encoder-decoder's encoder or decoder; ``embed.ln_embed``, ``embed.hook_embed``...), its
    ``blocks`` and its ``final_norm`` (None for a post-norm stack)."""

    name: str
    prefix: str
    embed: nn.Module
    blocks: nn.ModuleList
    final_norm: nn.Module | None

    def block_prefix(self, layer: int) -> str:
        return f"{self.prefix}blocks.{layer}."

    def check_layer(self, layer: int | None, what: str) -> int:
        """``layer`` as a block index 0..L (L: the final stream, before the final norm);
        None is L."""
        n = len(self.blocks)
        if layer is None:
            return n
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= n:
            raise ValueError(
                f"{what}: layer={layer!r}; allowed: 0..{n} (the stream entering that block; "
                f"{n} or None: the final stream, before the final norm)"
            )
        return layer


def model_of(cache: ActivationCache, what: str) -> nn.Module:
    """The model that made ``cache``, after checking that it ran in eval mode."""
    model = getattr(cache, "model", None)
    if model is None:
        raise ValueError(
            f"{what}: the cache does not say which model made it; make it with "
            "model.run_with_cache(...) or glassformer.circuits.circuit_cache(model, ...)"
        )
    if getattr(cache, "training", None):
        raise ValueError(
            f"{what}: the cache was made in training mode, where dropout (and BatchNorm's "
            "batch statistics) make the stream no plain sum of its terms; run the model in "
            "eval mode (model.eval(), or glassformer.circuits.circuit_cache)"
        )
    return model


def stack_view(model: nn.Module, stack: str | None, what: str) -> StackView:
    """The stack named ``stack`` of ``model``; None: the decoder when there is one."""
    if isinstance(model, EncoderDecoder):
        stacks, prefixed = {"decoder": model.decoder, "encoder": model.encoder}, True
    elif isinstance(model, DecoderLM | DecoderClassifier):
        stacks, prefixed = {"decoder": model}, False  # the model holds its embedding, blocks
    elif isinstance(model, EncoderModel):
        stacks, prefixed = {"encoder": model}, False
    else:
        raise ValueError(
            f"{what}: the cache's model is a {type(model).__name__}; allowed: a glassformer "
            "DecoderLM, DecoderClassifier, EncoderModel (MLM, classifier) or EncoderDecoder"
        )
    name = next(iter(stacks)) if stack is None else stack
    if name not in stacks:
        raise ValueError(
            f"{what}: stack={stack!r}; allowed for a {type(model).__name__}: {tuple(stacks)}"
        )
    body = stacks[name]  # holds the input embedding, the blocks and ln_final
    prefix = f"{name}." if prefixed else ""
    return StackView(name, prefix, body, body.blocks, body.ln_final)


def require(cache: ActivationCache, names: list[str], what: str) -> None:
    """A ValueError naming the points ``names`` that ``cache`` lacks, if any."""
    missing = [name for name in names if not dict.__contains__(cache, name)]
    if missing:
        shown = ", ".join(missing[:6]) + (
            f", ... ({len(missing)} in all)" if len(missing) > 6 else ""
        )
        raise ValueError(
            f"{what}: the cache lacks {shown}; make it with "
            "glassformer.circuits.circuit_cache(model, ...), or "
            "model.run_with_cache(..., names=glassformer.circuits.circuit_names) (or names=None: "
            "every point)"
        )
