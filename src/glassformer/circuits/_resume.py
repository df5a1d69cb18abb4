"""The corrupted run kept once, and each patched run resumed from it: what a patch cannot change
is not computed again (patching.py, patching_every.py, path_patching.py).

A patch at layer l changes nothing before layer l, so a patched run starts from the corrupted
run's stream entering block l (``run_blocks(..., start=l)``). In a causal stack a patch at
position p changes nothing at the positions before p, in any layer: their keys and values are
the corrupted run's (kept in a KV cache during that run) and only positions p..T-1 are
computed. After the last block the logits are computed where the metric reads them: at the
positions a built-in metric names (``read_positions``, e.g. ``logit_difference``'s final
position), else at p..T-1 beside the corrupted run's logits before p.

Which models resume (``Resumed.mode``): a DecoderLM ("causal": from layer l and position p),
an encoder model (EncoderModel, EncoderMLM, EncoderClassifier: "layers", from layer l, every
position; bidirectional attention lets a patch reach every position) when its blocks run on the
(B, T, C) batch (no token packing). Any other model, and an input with ``labels``, runs whole
each time ("whole"), as a plain re-run with the cell's hooks.

Memory: the corrupted run's stream entering every block (L × B × T × C), its keys and values
(2 × L × B × T × C in a causal stack), its final hidden states and logits (B × T × (C + N_V)),
and the points cached for patching; one cell's work on top.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from ..models.decoder import DecoderLM
from ..models.encoder import EncoderModel
from ..nn import DecoderCache, run_blocks
from ..nn.kv_cache import KVCache
from ._sites import Input, call

__all__ = ["Resumed", "cell_start", "evaluate"]

_LAYER = re.compile(r"^blocks\.(\d+)\.")


class Resumed:
    """The corrupted run of ``model`` on ``corrupted`` (in the caller's no-grad, eval-mode
    context), with ``names`` cached too; ``run(layer, position, hooks)`` resumes it."""

    def __init__(self, model, corrupted: Input, names: Sequence[str] = ()) -> None:
        self.model, self.corrupted = model, corrupted
        self.mode = _mode(model, corrupted)
        blocks = getattr(model, "blocks", ())
        starts = [f"blocks.{i}.hook_resid_pre" for i in range(len(blocks))]
        wanted = list(dict.fromkeys([*names, *starts])) if self.mode != "whole" else list(names)
        args: dict[str, Any] = {}
        options = {}
        if self.mode == "causal":
            self.kv = DecoderCache(len(blocks))
            options["cache"] = self.kv
        handle = None
        if self.mode != "whole":
            handle = blocks[0].register_forward_pre_hook(_capture(args), with_kwargs=True)
        try:
            self.out, self.cache = call(model.run_with_cache, corrupted, names=wanted, **options)
        finally:
            if handle is not None:
                handle.remove()
        if self.mode != "whole" and (args["kwargs"].get("packing") is not None):
            self.mode = "whole"  # the blocks ran on the packed tokens alone
        self.block_args = args
        self.batch = self.out.hidden_states.shape[0]  # B
        # a layer attending along its own graph (a window) reads cached keys from elsewhere
        self.causal = self.mode == "causal" and not _graphs(model)

    def run(self, layer: int, position: int, hooks) -> Any:
        """The output of the corrupted run with ``hooks`` attached, computed from block
        ``layer`` and (in a causal stack) position ``position`` on."""
        model = self.model
        if self.mode == "whole":
            return call(model.run_with_hooks, self.corrupted, hooks=hooks)
        position = self.first(position)
        x = self.cache[f"blocks.{layer}.hook_resid_pre"][:, position:]
        mask, options = self.block_args["mask"], dict(self.block_args["kwargs"])
        options["token_mask"] = _from(options.get("token_mask"), position, 1)
        rope = options.get("rope")
        if rope is not None:
            options["rope"] = tuple(_from(r, position, -2) for r in rope)
        if self.mode == "causal":
            options["cache"] = self._kv_before(layer, position)
        options.pop("memory_cache", None)
        with model.hooks(hooks):
            x = run_blocks(model.blocks, x, mask, start=layer, **options)
            return self.finish(x, position)

    def first(self, position: int) -> int:
        """The first position a resumed run computes for a patch at ``position``: itself in
        a causal stack, else 0 (every position)."""
        return position if self.causal else 0

    def finish(self, x: Tensor, position: int = 0) -> Any:
        """The model's output from the last block's output at positions ``position``..T-1
        (the positions before are the corrupted run's): the final norm, then the head."""
        token_mask = self.block_args["kwargs"].get("token_mask")
        if self.model.ln_final is not None:
            x = self.model.ln_final(x, _from(token_mask, position, 1))
        if self.mode == "layers":
            return self.model.outputs(x, token_mask, None)
        return self._lm_output(x, position)

    def _lm_output(self, h: Tensor, position: int) -> _Partial:
        """The output of a DecoderLM from the new hidden states at positions p..T-1."""
        before = self.out.hidden_states[:, :position]
        hidden = torch.cat([before, h], dim=1) if position else h
        return _Partial(self.model, hidden, self.out.logits, position)

    def _kv_before(self, layer: int, position: int) -> DecoderCache | None:
        """A cache holding the corrupted run's keys and values of positions < ``position``
        in blocks ``layer``.. (None when there are none)."""
        if not position:
            return None
        cache = DecoderCache(len(self.kv.self_attn))
        for i in range(layer, len(cache.self_attn)):
            kept = self.kv.self_attn[i]
            cache.self_attn[i] = KVCache()
            cache.self_attn[i].append(
                kept.keys[:, :, :position], kept.values[:, :, :position]
            )  # (B, H_kv, p, D)
        return cache


class _Partial:
    """A DecoderLM's output (as ModelOutput: ``logits``, ``hidden_states``, ``loss`` None)
    whose logits are computed when read: at the positions a metric reads (``at``), or in full
    (``logits``: the corrupted run's before p, new ones from p)."""

    loss = encoder_hidden_states = pooled = None

    def __init__(self, model, hidden: Tensor, corrupted_logits: Tensor, position: int) -> None:
        self.hidden_states = hidden  # (B, T, C)
        self._model, self._corrupted, self._position = model, corrupted_logits, position
        self._logits: Tensor | None = None

    def at(self, positions: Tensor) -> Tensor:
        """logits (B, N_V) at one position per row, ``positions`` (B,)."""
        rows = torch.arange(self.hidden_states.shape[0])
        return self._model.lm_logits(self.hidden_states[rows, positions][:, None])[:, 0]

    @property
    def logits(self) -> Tensor:
        """(B, T, N_V)."""
        if self._logits is None:
            p = self._position
            new = self._model.lm_logits(self.hidden_states[:, p:])
            self._logits = torch.cat([self._corrupted[:, :p], new], dim=1) if p else new
        return self._logits


def evaluate(metric, out) -> Tensor:
    """``metric(out)``, reading the logits at the metric's own positions when it names them
    (``metric.read_positions(batch, length)`` and ``metric.from_logits``) and ``out`` is
    computed on demand."""
    if isinstance(out, _Partial) and hasattr(metric, "read_positions"):
        b, t = out.hidden_states.shape[:2]
        return metric.from_logits(out.at(metric.read_positions(b, t)))
    return metric(out)


def cell_start(name: str, index: tuple) -> tuple[int, int, int | None]:
    """(layer, first position, position axis) of a patch of ``index`` into hook point
    ``name``: the position axis is 1 of (B, T, ...) points, 2 of a pattern (B, H, T, S); a
    patch of every position starts at 0 (axis None)."""
    found = _LAYER.match(name)
    layer = int(found.group(1)) if found else 0
    axis = 2 if name.endswith("hook_pattern") else 1
    if len(index) > axis and isinstance(index[axis], int):
        return layer, index[axis], axis
    return layer, 0, None


def _mode(model, corrupted: Input) -> str:
    if isinstance(corrupted, dict) and corrupted.get("labels") is not None:
        return "whole"
    forward = type(model).forward
    if isinstance(model, DecoderLM) and forward is DecoderLM.forward:
        return "causal"
    if isinstance(model, EncoderModel) and forward is EncoderModel.forward:
        return "layers"
    return "whole"


def _graphs(model) -> bool:
    """Whether a block attends along its own graph (a window: cached keys start elsewhere)."""
    return any(getattr(b, "graph", None) is not None for b in model.blocks)


def _capture(args: dict):
    def keep(module, positional: tuple, kwargs: dict) -> None:
        args["mask"] = positional[1] if len(positional) > 1 else kwargs.get("mask")
        args["kwargs"] = {k: v for k, v in kwargs.items() if k not in ("mask", "cache")}

    return keep


def _from(u: Tensor | None, position: int, axis: int) -> Tensor | None:
    """u from ``position`` on along ``axis`` (None stays None; an axis of length 1
    broadcasts and stays)."""
    if u is None or not position or u.shape[axis] == 1:
        return u
    return u.narrow(axis, position, u.shape[axis] - position)
