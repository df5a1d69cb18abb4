"""``capture(model)``: record what happens inside a forward pass.

    with capture(model) as rec:
        out = model(input_ids)
    rec.weights()            # (L, B, H, T, S) self-attention weights A of every layer, Eq. (1)
    rec.masks()              # (L, B, H, T, S) masks applied (causal + padding), True = may attend
    rec.records()[0].q       # (B, H, T, D) the queries of layer 0 (and .k, .v)
    rec.stream()             # the residual stream, one ResidualRecord per sub-layer
    rec.output().output      # == out.hidden_states

The records are made of the tensors the model computes, read at its hook points
(glassformer.nn.hooks; taps.py says which). While capturing, every attention layer runs its
written-out path (scores, mask, softmax), because a hook reads the pattern A; outputs agree
with an uncaptured pass to float rounding. On exit the hooks are removed.

The residual stream: ``rec.stream()[-1].after`` (= ``rec.output().last``) is the last block's
output, before any final norm; the stack's result ``rec.output().output`` is what the model
returns as ``hidden_states`` (``encoder_hidden_states`` for an encoder-decoder's encoder):
FinalNorm(last) when the stack has a final norm (pre-norm models), else ``last`` itself.

Calls: each run of a stack (Encoder or Decoder) during the capture has its own ``call`` index.
A plain forward pass is call 0; with a KV cache, call 0 is the prompt and each later step a
further call that records only its new query rows (``full_weights`` puts them together), and
every key and value attended to: the cached ones come from the earlier calls of the capture.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from weakref import WeakSet

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from .records import AttentionRecord, ResidualRecord, StackRecord
from .taps import StackTap, find_stacks

__all__ = ["Recording", "capture"]

KINDS = ("self", "cross")


class Recording:
    """Everything recorded by one ``capture``, in the order it happened.

    ``attention``, ``residual`` and ``outputs`` are the raw lists; the methods select one
    stack and call. ``stack`` names are the stacks' attribute names in the model ("decoder",
    "encoder"); it may be left out when only one stack fits.
    """

    def __init__(self, stacks: tuple[str, ...]) -> None:
        self.stacks = stacks
        self.attention: list[AttentionRecord] = []
        self.residual: list[ResidualRecord] = []
        self.outputs: list[StackRecord] = []

    # Selection -----------------------------------------------------------------------------
    def calls(self, stack: str | None = None) -> int:
        """How many times ``stack`` ran during the capture."""
        name = self._stack(stack, self.stacks)
        return sum(1 for r in self.outputs if r.stack == name)

    def records(
        self, kind: str = "self", stack: str | None = None, call: int = 0
    ) -> list[AttentionRecord]:
        """The attention records of one call, one per layer, in layer order."""
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not known; allowed {KINDS}")
        having = tuple(dict.fromkeys(r.stack for r in self.attention if r.kind == kind))
        name = self._stack(stack, having, f"{kind}-attention")
        found = [r for r in self.attention if (r.stack, r.kind, r.call) == (name, kind, call)]
        if not found:
            raise ValueError(f"call={call} is out of range: {name} ran {self.calls(name)} times")
        return sorted(found, key=lambda r: r.layer)

    def weights(self, kind: str = "self", stack: str | None = None, call: int = 0) -> Tensor:
        """(L, B, H, T, S): the attention weights A of every layer for one call."""
        return torch.stack([r.weights for r in self.records(kind, stack, call)])

    def masks(self, kind: str = "self", stack: str | None = None, call: int = 0) -> Tensor:
        """(L, B, H, T, S) bool: the mask each layer applied (True = may attend)."""
        return torch.stack([r.allowed for r in self.records(kind, stack, call)])

    def full_weights(self, kind: str = "self", stack: str | None = None) -> Tensor:
        """(L, B, H, T_all, S_all): the rows of all calls of a KV-cache run put together, zeros
        for the keys that did not exist yet (they are masked in a full pass anyway). For
        self-attention this equals the weights of one pass over the whole sequence."""
        return _stitch([self.weights(kind, stack, c) for c in range(self._n_calls(kind, stack))])

    def full_masks(self, kind: str = "self", stack: str | None = None) -> Tensor:
        """(L, B, H, T_all, S_all) bool: ``masks`` of all calls put together like
        ``full_weights`` (keys that did not exist yet are False)."""
        return _stitch([self.masks(kind, stack, c) for c in range(self._n_calls(kind, stack))])

    def stream(self, stack: str | None = None, call: int = 0) -> list[ResidualRecord]:
        """The residual steps of one call in order: block 0's sub-layers, block 1's, ..."""
        name = self._stack(stack, self.stacks)
        self._check_call(name, call)
        return [r for r in self.residual if (r.stack, r.call) == (name, call)]

    def states(self, stack: str | None = None, call: int = 0) -> Tensor:
        """(N + 1, B, T, C): the residual stream x^(0), then after each of the N sub-layers
        (before any final norm; ``output`` has the stack's result)."""
        steps = self.stream(stack, call)
        if not steps:
            return self.output(stack, call).last[None]
        return torch.stack([steps[0].before, *(r.after for r in steps)])

    def output(self, stack: str | None = None, call: int = 0) -> StackRecord:
        """The stack's last block output and its result after the final norm."""
        name = self._stack(stack, self.stacks)
        self._check_call(name, call)
        return next(r for r in self.outputs if (r.stack, r.call) == (name, call))

    def resolve_stack(self, stack: str | None = None) -> str:
        """The name of ``stack``, checked; None picks the only stack (an error if several)."""
        return self._stack(stack, self.stacks)

    # Helpers -------------------------------------------------------------------------------
    def _stack(self, stack: str | None, having: tuple[str, ...], what: str = "records") -> str:
        if stack is not None:
            if stack not in having:
                raise ValueError(f"stack={stack!r} has no {what}; allowed {having}")
            return stack
        if not having:
            raise ValueError(f"no {what} recorded: run the model inside `with capture(model):`")
        if len(having) > 1:
            raise ValueError(f"stack=None is ambiguous for {what}: pass one of {having}")
        return having[0]

    def _check_call(self, name: str, call: int) -> None:
        n = self.calls(name)
        if not 0 <= call < n:
            raise ValueError(f"call={call} is out of range for stack {name!r}: allowed 0..{n - 1}")

    def _n_calls(self, kind: str, stack: str | None) -> int:
        """The number of calls of a KV-cache run, checking each continues the one before."""
        name = self.records(kind, stack, 0)[0].stack
        n, rows = self.calls(name), 0
        for call in range(n):
            first = self.records("self", name, call)[0]
            if first.offset != rows:
                raise ValueError(
                    f"call {call} of {name!r} starts at position {first.offset}, not {rows}: "
                    "the calls are separate passes, not the steps of one KV-cache run; "
                    "select one with call=..."
                )
            rows += first.q.shape[2]
        return n

    def __repr__(self) -> str:
        return (
            f"Recording(stacks={self.stacks}, attention={len(self.attention)}, "
            f"residual={len(self.residual)}, outputs={len(self.outputs)})"
        )


def _stitch(parts: list[Tensor]) -> Tensor:
    """Concatenate (L, B, H, T_c, S_c) along the rows, right-padding keys with zeros."""
    if len({p.shape[:3] for p in parts}) != 1:
        raise ValueError(
            "the calls have different (layers, batch, heads) and cannot be put together "
            f"(shapes {[tuple(p.shape) for p in parts]}), e.g. a batch expanded for beam search"
        )
    s = max(p.shape[-1] for p in parts)
    padded = [torch.nn.functional.pad(p, (0, s - p.shape[-1])) for p in parts]
    return torch.cat(padded, dim=3)


@contextmanager
def capture(model: nn.Module) -> Iterator[Recording]:
    """Record attention (weights, masks, Q, K, V) and the residual stream of every stack of
    blocks in ``model`` (taps.find_stacks: a DecoderLM or EncoderModel itself, an
    encoder-decoder's encoder and decoder, a glassformer.nn Encoder or Decoder) while the block
    runs; yields the ``Recording``.

    The records are built by functions attached to the stacks' hook points (taps.py); they
    are removed on exit, also when the block raises. Capturing a model that is already being
    captured is refused.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"capture: model must be a torch.nn.Module, got {type(model).__name__}")
    stacks = find_stacks(model)
    if not stacks:
        raise ValueError(
            f"capture: {type(model).__name__} has no glassformer Encoder or Decoder stack; "
            "allowed: a glassformer model or a glassformer.nn Encoder / Decoder"
        )
    if any(stack in _CAPTURED for _, stack in stacks):
        raise ValueError("capture: this model is already being captured; captures do not nest")
    names = tuple(n for n, _ in stacks)
    rec = Recording(names)
    handles: list[RemovableHandle] = []
    try:
        for name, (_, stack) in zip(names, stacks, strict=True):
            _CAPTURED.add(stack)
            handles += StackTap(rec, name, stack).attach()
        yield rec
    finally:
        for handle in handles:
            handle.remove()
        _CAPTURED.difference_update(stack for _, stack in stacks)


_CAPTURED: WeakSet[nn.Module] = WeakSet()  # the stacks a capture is recording
