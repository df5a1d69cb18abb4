"""How big a model is, from its config alone, before the model is built for use.

The model is built on PyTorch's meta device, where tensors have shapes but no storage, without
its initial values (``_Unfilled``), and its tensors are counted. A small model (about four
million numbers or fewer, 16 MB) is built on the CPU instead: that takes milliseconds, while
PyTorch's meta kernels for some operations (position tables) load TorchDynamo, 2.6 s at the
start of a command. Parameters are counted as ``GlassformerModel.num_parameters`` counts them
(a tied matrix once), buffers (position tables, BatchNorm's running statistics) apart. Parameter
names sort the count into parts, so a message can name the settings that make it big.

Memory (budget.py): the parameters in their dtype (4 bytes in float32), and for training
also a gradient and the optimizer's state for each that trains (AdamW's two moments: 4 × 4 =
16 bytes a parameter in float32); plus the buffers.
Activations depend on the batch: ``activation_bytes`` estimates them (Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models": 34·C + 5·H·T bytes a token
and layer in 16 bits).
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode

from .config import ModelConfig
from .registry import model_class

__all__ = ["activation_bytes", "buffer_elements", "count_parameters", "parameter_parts"]

PARTS = ("vocabulary", "positions", "blocks", "classes", "other")
ON_CPU = 4_000_000  # a model of about this many numbers or fewer is built on the CPU to count
_last: dict[tuple, tuple[dict[str, int], int]] = {}  # the last model measured: a refusal asks again


def count_parameters(config: ModelConfig, architecture: str | type) -> int:
    """``architecture(config).num_parameters()``, without allocating the model;
    ``architecture`` is a model class or its name (config.json's "architecture")."""
    return sum(parameter_parts(config, architecture).values())


def parameter_parts(config: ModelConfig, architecture: str | type) -> dict[str, int]:
    """The parameter count split into "vocabulary" (token embeddings and unembeddings),
    "positions" (learned position rows), "blocks" (the stacks), "classes" (the classifier)
    and "other" (norms, segments, poolers, head transforms)."""
    return dict(_measure(config, architecture)[0])


def buffer_elements(config: ModelConfig, architecture: str | type) -> int:
    """Numbers held in buffers, not parameters: fixed position tables (sinusoidal (max_len,
    C), rotary cos and sin (max_len, D) each) and BatchNorm's running statistics."""
    return _measure(config, architecture)[1]


def activation_bytes(config: ModelConfig, tokens: int, itemsize: int = 4) -> int:
    """About the memory a training step keeps for the backward pass of ``tokens`` tokens
    (batch × length): per token and layer (34·C + 5·H·T)·itemsize/2 bytes (Korthikanti et
    al., with T = max_len), and three numbers per vocabulary entry for the logits."""
    c = config
    layers = c.n_layer + (c.resolved_n_decoder_layer if c.family == "encoder-decoder" else 0)
    per_layer = (34 * c.d_model + 5 * c.n_head * c.max_len) * itemsize // 2
    logits = 3 * c.resolved_tgt_vocab_size * itemsize if c.family != "encoder" else 0
    return tokens * (layers * per_layer + logits)


def _measure(config: ModelConfig, architecture: str | type) -> tuple[dict[str, int], int]:
    """The parameter parts and the buffer elements of the model built on the meta device."""
    cls = _class(architecture)
    key = (cls, repr(config))
    if (found := _last.get(key)) is not None:
        return found
    large = _rough_size(config) > ON_CPU
    with torch.random.fork_rng(devices=[]), contextlib.ExitStack() as building:  # RNG untouched
        building.enter_context(torch.device("meta" if large else "cpu"))  # whatever the default
        if large:
            building.enter_context(_Unfilled())
        model = cls(config)
    parts = dict.fromkeys(PARTS, 0)
    for name, p in model.named_parameters():  # a tied matrix once, under its first name
        parts[_part(name)] += p.numel()
    found = parts, sum(b.numel() for b in model.buffers())
    _last.clear()
    _last[key] = found
    return found


def _rough_size(config: ModelConfig) -> int:
    """About the numbers a model of ``config`` holds (which device to count it on): the
    vocabulary and position rows, and each layer's attention (4·C²) and MLP (3·C·d_ff at most)."""
    c = config
    layers = c.n_layer + (c.resolved_n_decoder_layer if c.family == "encoder-decoder" else 0)
    rows = c.vocab_size + c.resolved_tgt_vocab_size + c.max_len
    return rows * c.d_model + layers * (4 * c.d_model**2 + 3 * c.d_model * c.resolved_d_ff)


class _Unfilled(TorchFunctionMode):
    """Leaves the initial values out while a model is built on the meta device to be counted:
    ``torch.nn.init``'s functions and a tensor's in-place random fills return the tensor as it
    is (a meta tensor has no values to fill, and PyTorch's meta kernels for those fills load
    TorchDynamo, 2.6 s at the start of a ``glassformer train``)."""

    FILLS = frozenset(["normal_", "uniform_", "random_", "bernoulli_", "exponential_"])

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init" or (
            getattr(func, "__name__", None) in self.FILLS
        ):
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def _part(name: str) -> str:
    """The part a parameter belongs to, from its name: "embed.weight" -> vocabulary,
    "pos_embed.weight" -> positions, "blocks.0.mlp.fc1.weight" -> blocks (an encoder-decoder's
    "encoder." and "decoder." are looked through)."""
    words = name.split(".")
    if words[0] in ("encoder", "decoder"):
        words = words[1:]
    if words[0] in ("blocks", "ln_final"):
        return "blocks"
    if words[0] in ("embed", "unembed"):
        return "vocabulary"
    if words[0] == "pos_embed":
        return "positions"
    return "classes" if words[0] == "classifier" else "other"


def _class(architecture: str | type) -> type:
    return architecture if not isinstance(architecture, str) else model_class(architecture)
