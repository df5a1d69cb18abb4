"""Reading and replacing a model's intermediates through its hook points.

    out, cache = model.run_with_cache(input_ids)          # every intermediate, detached
    cache["blocks.0.attn.hook_pattern"]                   # (B, H, T, S): A of layer 0
    cache["pattern", 0]                                   # the same, TransformerLens's short form

    def ablate_head(z, hook):                             # z (B, T, H, D)
        z = z.clone()                                     # a new tensor: autograd may need z
        z[:, :, 3] = 0.0
        return z
    out = model.run_with_hooks(input_ids, hooks=[("blocks.1.attn.hook_z", ablate_head)])

A hook is ``(name_or_filter, fn)``: a hook point's name, or a function of the name that says
True for the points to hook. ``fn(tensor, hook=point)`` may return a replacement tensor.
``model.hook_points()`` lists the names (see glassformer.nn.hooks for how they are made, and
the table of the hook-points guide, docs/guide/hooks.md, for what each holds).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from inspect import signature
from typing import Any

from torch import Tensor

from .. import drawing
from ..nn.hooks import HookFn, HookPoint, hook_points

__all__ = ["ActivationCache", "HookedModel"]

NameFilter = str | Callable[[str], bool]


class ActivationCache(dict):
    """Hook point name -> the tensor that passed it (detached), in the order of the pass.

    ``cache[name]`` by full name, or ``cache[short, layer]`` / ``cache[short, layer, stack]``
    for ``{stack.}blocks.{layer}.…hook_{short}`` (e.g. ``cache["pattern", 0]``,
    ``cache["resid_post", 1, "encoder"]``) when exactly one point matches.

    ``run_with_cache`` also records ``model``, the model the pass ran (so that analyses such
    as glassformer.circuits need only the cache), ``training``, its train/eval mode then, and
    ``inputs``, the tensors it was given by argument name (``input_ids``, ``attention_mask``,
    ``decoder_input_ids``, ...); all are None for a cache built by hand.

    ``cache.show("pattern", layer=1)`` draws the pass in a notebook (also ``"residual"``,
    ``"lens"``): the explorer's views, glassformer.explore.views.show_cache."""

    model: Any = None
    training: bool | None = None
    inputs: dict[str, Tensor] | None = None

    def show(self, what: str = "pattern", layer: int = 0, **options: Any) -> Any:
        """An interactive view of this pass, inline in a notebook (glassformer.explore's
        ``show_cache``, which documents ``what`` and the options): the attention pattern of
        ``layer`` with controls for the head and the layer, the residual stream, the lens."""
        return drawing.draw("cache", self, what, layer, **options)

    def __getitem__(self, key: str | tuple) -> Tensor:
        if isinstance(key, tuple):
            if len(key) not in (2, 3):
                raise KeyError(
                    f"{key!r}: the short form is (short name, layer) or (short name, layer, "
                    "stack), e.g. ('pattern', 0)"
                )
            key = self._resolve(*key)
        if not dict.__contains__(self, key):
            near = difflib.get_close_matches(str(key), list(self), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise KeyError(f"{key!r} is not in the cache{hint}")
        return dict.__getitem__(self, key)

    def _resolve(self, short: str, layer: int, stack: str = "") -> str:
        prefix = f"{stack}.blocks." if stack else "blocks."
        if not isinstance(layer, int) or isinstance(layer, bool):
            raise KeyError(
                f"({short!r}, {layer!r}): the layer is a block index, an int; cached layers: "
                f"{_spans(self._layers(prefix))}"
            )
        found = [
            n for n in self if n.startswith(f"{prefix}{layer}.") and n.endswith(f".hook_{short}")
        ]
        if len(found) == 1:
            return found[0]
        where = f"({short!r}, {layer}{', ' + repr(stack) if stack else ''})"
        layers = self._layers(prefix)
        if not found and layer not in layers:
            stacks = f"the {stack} stack" if stack else "the cache"
            raise KeyError(
                f"{where}: layer {layer} is not in {stacks}; its layers are {_spans(layers)}"
            )
        if not found:
            raise KeyError(self._not_cached(where, short, f"{prefix}{layer}."))
        raise KeyError(f"{where} names {len(found)} cached points ({found[:4]}); use a full name")

    def _not_cached(self, where: str, short: str, block: str) -> str:
        """Why no cached point of ``block`` (``"blocks.1."``) ends in ``hook_{short}``: the
        model has such a point that this pass did not cache (and how to cache it), or none."""
        model_points = getattr(self.model, "hook_points", None)
        names = [] if model_points is None else list(model_points())
        matching = [n for n in names if n.startswith(block) and n.endswith(f".hook_{short}")]
        if matching:
            shown = ", ".join(repr(n) for n in matching[:2])
            extra = (
                " (glassformer.circuits.circuit_cache leaves the attention scores and pattern "
                "out, so attention keeps its fused kernel)"
                if short in ("pattern", "attn_scores")
                else ""
            )
            return (
                f"{where}: {shown} was not cached in this pass{extra}; cache it with "
                f"model.run_with_cache(..., names=[{matching[0]!r}, ...]), or names=None for "
                "every point"
            )
        if names:
            ends = sorted({n.rpartition(".hook_")[2] for n in names if n.startswith(block)})
            return f"{where}: the model has no point hook_{short} in that block; it has {ends}"
        cached = sorted({n.rpartition(".hook_")[2] for n in self if n.startswith(block)})
        return f"{where}: no cached point of that block ends in hook_{short}; cached: {cached}"

    def _layers(self, prefix: str) -> list[int]:
        """The block indices of the cached points named ``{prefix}{layer}.…``, sorted."""
        found = set()
        for name in self:
            index = name[len(prefix) :].partition(".")[0] if name.startswith(prefix) else ""
            if index.isdigit():
                found.add(int(index))
        return sorted(found)


def _spans(layers: list[int]) -> str:
    """[0, 1, 2, 5] -> "0..2, 5"; "none" for no layer."""
    if not layers:
        return "none"
    runs: list[list[int]] = []
    for n in layers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


class HookedModel:
    """The hook API of a glassformer model (a mixin of GlassformerModel)."""

    def hook_points(self) -> dict[str, HookPoint]:
        """Every hook point of the model by its public name."""
        return hook_points(self)

    @contextmanager
    def hooks(self, hooks: Iterable[tuple[NameFilter, HookFn]] = ()) -> Iterator[None]:
        """Attach ``hooks`` for the duration of the block; they are removed on exit, also
        when the block raises."""
        handles = []
        try:
            points = self.hook_points()
            for hook in hooks:
                name_or_filter, fn = _pair(hook)
                for name in _select(points, name_or_filter):
                    handles.append(points[name].add_hook(fn))
            yield
        finally:
            for handle in handles:
                handle.remove()

    def run_with_hooks(
        self, *args: Any, hooks: Iterable[tuple[NameFilter, HookFn]] = (), **kwargs: Any
    ) -> Any:
        """``self(*args, **kwargs)`` with ``hooks`` attached for this one call."""
        with self.hooks(hooks):
            return self(*args, **kwargs)

    def run_with_cache(
        self,
        *args: Any,
        names: str | Iterable[str] | Callable[[str], bool] | None = None,
        hooks: Iterable[tuple[NameFilter, HookFn]] = (),
        **kwargs: Any,
    ) -> tuple[Any, ActivationCache]:
        """``(self(*args, **kwargs), cache)``: the cache holds what passed each hook point
        named in ``names`` (all when None; one name, a list of names, or a filter on the
        name, as TransformerLens's ``names_filter``), after any ``hooks``
        given here replaced it. Asking for the scores, the pattern or the mask makes attention
        run its written-out path; asking for ``hook_result`` computes each head's term."""
        cache = ActivationCache()
        cache.model, cache.training = self, self.training
        cache.inputs = _named_tensors(self.forward, args, kwargs)

        def store(tensor: Tensor, hook: HookPoint) -> None:
            cache[hook.name] = tensor.detach()

        points = self.hook_points()
        wanted = list(points) if names is None else _wanted(points, names)
        with self.hooks([*hooks, (_one_of(wanted), store)]):
            out = self(*args, **kwargs)
        return out, cache


def _named_tensors(forward: Callable, args: tuple, kwargs: dict) -> dict[str, Tensor]:
    """The tensors of a call ``forward(*args, **kwargs)`` by the name of their argument."""
    try:
        bound = signature(forward).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):  # a signature that does not bind: nothing is named
        return {}
    return {k: v for k, v in bound.arguments.items() if isinstance(v, Tensor)}


def _one_of(names: list[str]) -> Callable[[str], bool]:
    chosen = set(names)
    return lambda name: name in chosen


def _pair(hook: Any) -> tuple[NameFilter, HookFn]:
    """One ``(name_or_filter, fn)`` of a ``hooks`` list, or a ValueError saying what it is."""
    if not isinstance(hook, tuple | list) or len(hook) != 2 or not callable(hook[1]):
        raise ValueError(
            f"a hook is (name or filter, fn) with fn callable; got {hook!r:.60} (hooks is a list "
            "of them: hooks=[(name, fn)] for one)"
        )
    return hook[0], hook[1]


def _wanted(points: dict[str, HookPoint], names: Any) -> list[str]:
    """The points ``run_with_cache(names=...)`` asks for: one name, names, or a filter."""
    if isinstance(names, str) or callable(names):
        return _select(points, names)
    if isinstance(names, bytes) or not isinstance(names, Iterable):
        raise ValueError(
            f"names must be a hook point name, a list of names or a filter on the name; got "
            f"{type(names).__name__}"
        )
    names = list(names)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(
                f"names must be hook point names (str); got {type(name).__name__} {name!r:.40}"
            )
    return [n for name in names for n in _select(points, name)]


def _select(points: dict[str, HookPoint], name_or_filter: NameFilter) -> list[str]:
    """The names ``name_or_filter`` picks, or a ValueError naming the near misses."""
    if isinstance(name_or_filter, str):
        if name_or_filter in points:
            return [name_or_filter]
        near = difflib.get_close_matches(name_or_filter, list(points), n=3)
        if near:
            hint = f"; did you mean {', '.join(near)}?"
        else:
            some = ", ".join(list(points)[:4])
            hint = f"; it has {len(points)}, e.g. {some}" if points else "; it has none"
        raise ValueError(
            f"{name_or_filter!r} is not a hook point of this model{hint} "
            "(model.hook_points() lists them)"
        )
    if not callable(name_or_filter):
        raise ValueError(
            f"a hook is (name or filter, fn); got {type(name_or_filter).__name__} for the name"
        )
    chosen = [name for name in points if name_or_filter(name)]
    if not chosen:
        raise ValueError("the hook's name filter picks no hook point (model.hook_points())")
    return chosen
