"""The hook functions ``capture`` attaches to one stack's hook points (glassformer.nn.hooks),
and how they turn what passes the points into records.

A call of the stack begins where its first block's ``hook_resid_pre`` fires. Each block's
stream points (``hook_resid_pre``, ``hook_resid_mid``, ``hook_resid_mid_cross``,
``hook_resid_post``) and sub-layer outputs (``hook_attn_out``, ``hook_cross_attn_out``,
``hook_mlp_out``) give one ResidualRecord per sub-layer; each attention's ``hook_q``/``hook_k``/
``hook_v`` (``hook_rot_q``/``hook_rot_k`` after RoPE), ``hook_mask`` and ``hook_pattern`` one
AttentionRecord; the final norm's ``hook_normalized`` (or, without one, the last block's
``hook_resid_post``) the StackRecord. Every function returns None: the pass is not changed.
Under a KV cache the record's keys and values are those of ``hook_keys``/``hook_values``:
every key and value the call attended to, the cached ones included.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from ..nn import Decoder, DecoderBlock, Encoder, EncoderBlock, HookPoint, MultiHeadAttention
from .records import AttentionRecord, ResidualRecord, StackRecord

__all__ = ["StackTap", "find_stacks", "is_decoder_stack"]

SUBLAYERS = (  # (ResidualRecord.sublayer, the block's attribute, its output's hook point)
    ("self_attn", "attn", "hook_attn_out"),
    ("cross_attn", "cross_attn", "hook_cross_attn_out"),
    ("ff", "mlp", "hook_mlp_out"),
)
AFTER = {
    "self_attn": "hook_resid_mid",
    "cross_attn": "hook_resid_mid_cross",
    "ff": "hook_resid_post",
}


def find_stacks(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The stacks of blocks in ``model``, in module order, by name: each module that holds
    ``blocks`` (EncoderBlocks or DecoderBlocks) and ``ln_final``, a glassformer.nn Encoder or
    Decoder included. A stack's name is its attribute path ("encoder", "decoder" of an
    encoder-decoder); a model that holds its blocks itself (DecoderLM, EncoderModel) or a bare
    stack is named "decoder" or "encoder" by its blocks."""
    found = []
    for path, module in model.named_modules():
        if isinstance(module, Encoder | Decoder) or _holds_blocks(module):
            name = path or ("decoder" if is_decoder_stack(module) else "encoder")
            found.append((name, module))
    return found


def is_decoder_stack(stack: nn.Module) -> bool:
    """Is ``stack`` made of DecoderBlocks (causal self-attention)? (A DecoderLM without
    layers is one, by its family.)"""
    return (
        isinstance(stack, Decoder)
        or getattr(stack, "family", None) == "decoder"
        or (len(stack.blocks) > 0 and isinstance(stack.blocks[0], DecoderBlock))
    )


def _holds_blocks(module: nn.Module) -> bool:
    blocks = getattr(module, "blocks", None)
    return (
        isinstance(blocks, nn.ModuleList)
        and all(isinstance(b, EncoderBlock | DecoderBlock) for b in blocks)
        and hasattr(module, "ln_final")
    )


class StackTap:
    """Records the calls of one stack (see ``find_stacks``) into ``rec`` (a Recording)."""

    def __init__(self, rec, name: str, stack: nn.Module) -> None:
        self.rec, self.name, self.stack = rec, name, stack
        self.call = -1  # the call under way; -1 before the first
        self.stream: Tensor | None = None  # the residual stream X as last seen
        self.update: Tensor | None = None  # what the current sub-layer wrote
        self.handles: list[RemovableHandle] = []

    def attach(self) -> list[RemovableHandle]:
        """Attach the hook functions; returns their handles (``remove()`` detaches each)."""
        blocks = list(self.stack.blocks)
        for i, block in enumerate(blocks):
            self._on(block.hook_resid_pre, self._block_start(i == 0))
            for sublayer, attr, out in SUBLAYERS:
                module = getattr(block, attr)
                if module is None:
                    continue
                self._on(getattr(block, out), self._sublayer_output)
                last = i == len(blocks) - 1 and sublayer == "ff" and self.stack.ln_final is None
                self._on(getattr(block, AFTER[sublayer]), self._sublayer_end(i, sublayer, last))
                if isinstance(module, MultiHeadAttention):
                    kind = "self" if sublayer == "self_attn" else "cross"
                    _AttentionTap(self, i, kind, module).attach()
        if self.stack.ln_final is not None:
            self._on(self.stack.ln_final.hook_normalized, self._stack_end)
        return self.handles

    def _on(self, point: HookPoint, fn: Callable[[Tensor], None]) -> None:
        def hook(tensor: Tensor, hook: HookPoint) -> None:
            fn(tensor.detach())

        self.handles.append(point.add_hook(hook))

    # Hook functions ------------------------------------------------------------------------
    def _block_start(self, first: bool) -> Callable[[Tensor], None]:
        def start(x: Tensor) -> None:
            if first:  # a new run of the stack
                self.call += 1
            self.stream = x

        return start

    def _sublayer_output(self, u: Tensor) -> None:
        self.update = u

    def _sublayer_end(self, layer: int, sublayer: str, last: bool) -> Callable[[Tensor], None]:
        def end(after: Tensor) -> None:
            record = ResidualRecord(
                self.name, layer, sublayer, self.call, self.stack.blocks[layer].norm_first,
                self.stream, self.update, after,
            )  # fmt: skip
            self.rec.residual.append(record)
            self.stream = after
            if last:  # no final norm: the stack returns the last block's output
                self._stack_end(after)

        return end

    def _stack_end(self, output: Tensor) -> None:
        final_norm = self.stack.ln_final is not None
        self.rec.outputs.append(StackRecord(self.name, self.call, final_norm, self.stream, output))


class _AttentionTap:
    """Collects Q, K, V and the mask of one attention layer's call; its pattern A completes
    the AttentionRecord."""

    def __init__(self, stack: StackTap, layer: int, kind: str, attn: MultiHeadAttention) -> None:
        self.stack, self.layer, self.kind, self.attn = stack, layer, kind, attn
        self.parts: dict[str, Tensor] = {}

    def attach(self) -> None:
        a = self.attn
        points = {"q": a.hook_q, "k": a.hook_keys, "v": a.hook_values, "mask": a.hook_mask}
        points.update(q_rot=a.hook_rot_q)  # after RoPE: replaces q
        for part, point in points.items():
            self.stack._on(point, self._keep(part.removesuffix("_rot")))
        self.stack._on(a.hook_pattern, self._record)

    def _keep(self, part: str) -> Callable[[Tensor], None]:
        def keep(t: Tensor) -> None:
            self.parts[part] = t if part == "mask" else t.transpose(1, 2)  # (B, H, T, D)

        return keep

    def _record(self, weights: Tensor) -> None:
        parts, self.parts = self.parts, {}
        q, k, v, mask = parts["q"], parts["k"], parts["v"], parts["mask"]
        t, s = weights.shape[-2:]
        causal = self.kind == "self" and (
            is_decoder_stack(self.stack.stack) or _hides_later_keys(mask, s - t)
        )
        stack = self.stack
        record = AttentionRecord(
            stack.name, self.layer, self.kind, stack.call, q, k, v, mask, weights, causal
        )
        stack.rec.attention.append(record)


def _hides_later_keys(mask: Tensor, offset: int) -> bool:
    """Does the mask (B, H, T, S) hide every key m > n + offset from query n (the causal
    rule), with at least one such key?"""
    t, s = mask.shape[-2:]
    later = (
        torch.arange(s, device=mask.device) > torch.arange(t, device=mask.device)[:, None] + offset
    )
    allowed = mask if mask.dtype == torch.bool else mask > float("-inf")
    return bool(later.any()) and not bool((allowed & later).any())
