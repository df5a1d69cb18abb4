"""Where an intervention acts: a model's block stacks, the hook names of a layer's heads and
residual stream, and how an input (ids, or a dict of the model's arguments) is passed to the
model. Shared by ablation.py and patching.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor, nn

from ..nn import Decoder, DecoderBlock

__all__ = ["Input", "Stack", "call", "chosen", "find_stack", "input_shapes", "model_stacks"]
__all__ += ["real_tokens"]

# An input: the ids (the model's first argument), a dict of its keyword arguments
# (``dict(input_ids=..., attention_mask=..., decoder_input_ids=...)``) or a tuple of its
# positional arguments.
Input = Tensor | Mapping[str, Any] | Sequence[Any]

# the points of one layer that hold a (B, T, C) tensor, in the order of the pass
STREAM_POINTS = ("resid_pre", "attn_out", "resid_mid", "cross_attn_out", "resid_mid_cross")
STREAM_POINTS += ("mlp_out", "resid_post")
CROSS_ONLY = ("cross_attn_out", "resid_mid_cross")
# the points of an attention layer that hold one slice per head
HEAD_POINTS = ("z", "q", "k", "v", "pattern")


class Stack:
    """One block stack of a model: its name (``"encoder"`` or ``"decoder"``), the prefix of
    its hook names (``""`` in a one-stack model, ``"encoder."`` / ``"decoder."`` in an
    encoder-decoder) and its blocks."""

    def __init__(self, name: str, prefix: str, module: nn.Module) -> None:
        self.name, self.prefix, self.blocks = name, prefix, module.blocks
        self.cross = any(getattr(b, "cross_attn", None) is not None for b in self.blocks)
        self.paired = False  # one of an encoder-decoder's two stacks

    def __len__(self) -> int:
        return len(self.blocks)

    def point(self, layer: int, short: str, arg: str = "hook") -> str:
        """``{prefix}blocks.{layer}.hook_{short}``, after checking ``short`` (the argument
        ``arg``) and ``layer``."""
        if short not in STREAM_POINTS or (short in CROSS_ONLY and not self.cross):
            allowed = [p for p in STREAM_POINTS if self.cross or p not in CROSS_ONLY]
            raise ValueError(f"{arg}={short!r} is not known here; choose one of {allowed}")
        return f"{self.prefix}blocks.{self.check_layer(layer)}.hook_{short}"

    def z(self, layer: int, kind: str) -> str:
        """The hook name of hook_z of the ``kind`` attention of ``layer``."""
        attn = "attn" if kind == "self" else "cross_attn"
        return f"{self.prefix}blocks.{self.check_layer(layer)}.{attn}.hook_z"

    def head_point(self, layer: int, kind: str, what: str) -> str:
        """The hook name of ``hook_{what}`` (q, k, v, pattern, z) of the ``kind`` attention
        of ``layer``."""
        if what not in HEAD_POINTS:
            raise ValueError(f"activation={what!r} is not known; choose one of {HEAD_POINTS}")
        return self.z(layer, kind)[: -len("z")] + what

    def n_head(self, layer: int, kind: str) -> int:
        block = self.blocks[self.check_layer(layer)]
        return (block.attn if kind == "self" else block.cross_attn).n_head

    def check_layer(self, layer: Any) -> int:
        if not _is_index(layer) or not 0 <= layer < len(self.blocks):
            raise ValueError(
                f"layer {layer!r} is out of range: the {self.name} stack has "
                f"{len(self.blocks)} layers (0 to {len(self.blocks) - 1})"
            )
        return layer

    def check_kind(self, kind: str) -> str:
        if kind not in ("self", "cross"):
            raise ValueError(f"kind={kind!r} is not known; choose 'self' or 'cross'")
        if kind == "cross" and not self.cross:
            raise ValueError(
                f"kind='cross': the {self.name} stack of this model has no cross-attention "
                "(only the decoder of an encoder-decoder has; use kind='self')"
            )
        return kind

    def check_head(self, layer: Any, head: Any, kind: str) -> tuple[int, int]:
        n = self.n_head(layer, kind)
        if not _is_index(head) or not 0 <= head < n:
            raise ValueError(
                f"head {head!r} of layer {layer} is out of range: it has {n} heads (0 to {n - 1})"
            )
        return layer, head


def _is_index(x: Any) -> bool:
    """An int, not a bool (True would index as a new axis)."""
    return isinstance(x, int) and not isinstance(x, bool)


def chosen(spec: Any, n: int, arg: str, what: str) -> list[int]:
    """The indices a grid's ``layers=``, ``heads=`` or ``positions=`` (the argument ``arg``)
    asks for among ``n`` (``what``: "layers", …): None every one, an int one, a range or a
    list several, in the order given; each in 0..n-1 and at most once."""
    if spec is None:
        return list(range(n))
    items = [spec] if _is_index(spec) else spec
    if not isinstance(items, range | list | tuple) or not all(_is_index(i) for i in items):
        raise ValueError(
            f"{arg}={spec!r}: give an int, a range or a list of ints (None: all {n} {what})"
        )
    bad = [i for i in items if not 0 <= i < n]
    if bad:
        raise ValueError(f"{arg}={spec!r}: {bad} out of range; there are {n} {what} (0 to {n - 1})")
    if len(set(items)) != len(items) or not items:
        raise ValueError(f"{arg}={spec!r}: give each of the {what} once, and at least one")
    return list(items)


def model_stacks(model: nn.Module) -> dict[str, nn.Module]:
    """The modules that hold ``model``'s blocks (and ``ln_final``), by stack name: an
    encoder-decoder's ``encoder`` and ``decoder``; a model that holds its blocks itself
    (DecoderLM, EncoderModel) is its one stack, ``"decoder"`` when its blocks are
    DecoderBlocks, else ``"encoder"``."""
    stacks = {}
    for name in ("encoder", "decoder"):
        module = getattr(model, name, None)
        if isinstance(module, nn.Module) and hasattr(module, "blocks"):
            stacks[name] = module
    if not stacks and isinstance(getattr(model, "blocks", None), nn.ModuleList):
        blocks = model.blocks
        decoder = (
            isinstance(model, Decoder)
            or getattr(model, "family", None) == "decoder"
            or (len(blocks) > 0 and isinstance(blocks[0], DecoderBlock))
        )
        stacks["decoder" if decoder else "encoder"] = model
    return stacks


def find_stack(model: nn.Module, stack: str | None) -> Stack:
    """The block stack ``stack`` names (``"encoder"`` | ``"decoder"``; None: the decoder when
    the model has one, else the encoder). Hook names start with the stack's name only where
    the model has two stacks (an encoder-decoder), as TransformerLens's names."""
    stacks = model_stacks(model)
    paired = len(stacks) == 2
    found = {name: Stack(name, f"{name}." if paired else "", m) for name, m in stacks.items()}
    for found_stack in found.values():
        found_stack.paired = paired
    if not found:
        raise ValueError(f"{type(model).__name__} has no encoder or decoder block stack")
    if stack is None:
        return found.get("decoder") or found["encoder"]
    if stack not in found:
        raise ValueError(f"stack={stack!r}: this model's stacks are {sorted(found)}")
    return found[stack]


def call(method, inputs: Input, **options: Any) -> Any:
    """``method(inputs)``, ``method(**inputs)`` or ``method(*inputs)``, with ``options``."""
    if isinstance(inputs, Tensor):
        return method(inputs, **options)
    if isinstance(inputs, Mapping):
        return method(**inputs, **options)
    if isinstance(inputs, Sequence) and not isinstance(inputs, str):
        return method(*inputs, **options)
    raise ValueError(
        f"an input is the ids (a tensor), a dict of the model's arguments or a tuple of them; "
        f"got {type(inputs).__name__}"
    )


def input_shapes(inputs: Input) -> Any:
    """The shapes of the tensors of an input, in its own structure (for comparing two)."""
    if isinstance(inputs, Tensor):
        return tuple(inputs.shape)
    if isinstance(inputs, Mapping):
        return {k: input_shapes(v) for k, v in inputs.items() if v is not None}
    if isinstance(inputs, Sequence) and not isinstance(inputs, str):
        return [input_shapes(v) for v in inputs if v is not None]
    return inputs


def real_tokens(inputs: Input, stack: Stack) -> Tensor | None:
    """The (B, T) mask of real tokens of ``stack`` in ``inputs``, when it gives one."""
    if not isinstance(inputs, Mapping):
        return None
    key = "decoder_attention_mask" if stack.paired and stack.name == "decoder" else "attention_mask"
    return inputs.get(key)
