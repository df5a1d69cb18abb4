"""Path patching: how much of a clean run's behaviour flows along one path, from a sender
component straight into a receiver (Wang et al. (2022), "Interpretability in the Wild: a
Circuit for Indirect Object Identification in GPT-2 small"; Goldowsky-Dill et al. (2023),
"Localizing Model Behavior with Path Patching").

The residual stream is a sum of what the components write ("Brief Notes on Transformers":
x1 = H(x0) + x0, H(x) = Σ_j h_j(x)), so a component that reads the stream at layer l′ reads
each earlier component's write directly, one term of the sum. A sender s is a head (l, h),
writing w_s = z_h W^O_h (its share of the attention output, without the bias), or layer l's
MLP, writing its output. Its clean-minus-corrupted write, from the two unpatched runs, is

    Δ = Σ_s (w_s(clean) − w_s(corrupted))      (B, T, C), summed over the senders given.

Path patching s → r runs the corrupted input once more, with only the receiver r reading the
stream with Δ added:

* a head's query, key or value, r = (l′, h′, "q"): that head alone computes its input from
  r_{l′} + Δ instead of the stream r_{l′} entering block l′,
      q_{h′} = norm1(r_{l′} + Δ) W^Q_{h′} + b^Q_{h′}      (k, v alike; before any rotary)
  while every other head and MLP reads r_{l′} as the run has it; what comes after the
  receiver is recomputed from its new output (TransformerLens's ``get_act_patch_direct_path``);
* ``"resid_final"``, the stream the output layer reads: logits = unembed(norm_final(x_L + Δ)).
  This is the direct path to the logits: the same as patching the senders' outputs into the
  final stream only, not into any later component.

The result is the metric of that run (``normalize``: 0 at the corrupted run, 1 at the clean
one). A receiver reads only what was written before it: every sender must be in an earlier
layer than every receiving head. The sender's write reaches the stream unchanged only in
pre-norm blocks (post-norm ones pass it through a norm), so only pre-norm models of one stack
are supported.

    patch_path(model, clean, corrupted, metric, sender=(0, 1), receiver=[(1, 2, "q")])
    patch_path_senders(model, clean, corrupted, metric)             # (L, H): each head → logits
    patch_path_receivers(model, clean, corrupted, metric, (0, 1))   # (L, H): (0, 1) → each q
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from typing import Any

import torch
from torch import Tensor

from ..models.base import eval_mode
from ..nn.lora import effective_weight
from ._patch_runs import Metric, check_inputs, normalized, run_each, scalar
from ._sites import Input, Stack, call, find_stack

__all__ = ["patch_path", "patch_path_receivers", "patch_path_senders"]

COMPONENTS = ("q", "k", "v")
Sender = tuple[int, Any]  # (layer, head) or (layer, "mlp")
Receiver = Any  # "resid_final" or (layer, head, "q" | "k" | "v")


def patch_path(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    sender: Sender | Sequence[Sender],
    receiver: Receiver | Sequence[Receiver] = "resid_final",
    *,
    normalize: bool = False,
) -> Tensor:
    """The metric of the corrupted run with the path from ``sender`` (a head ``(layer, head)``,
    an MLP ``(layer, "mlp")``, or a list of them, their writes summed) to ``receiver``
    (``"resid_final"``, a head's input ``(layer, head, "q" | "k" | "v")``, or a list of them,
    all patched in the same run) taken from the clean run: a scalar tensor. With
    grouped-query attention the head of a "k" or "v" receiver counts key/value heads."""
    paths = _Paths(model)
    senders, receivers = paths.senders(sender), paths.receivers(receiver)
    paths.check_order(senders, receivers)
    with torch.no_grad(), eval_mode(model):
        metric = paths.cache(clean, corrupted, metric, normalize)
        runs = [paths.hooks(paths.delta(senders), receivers)]
        return run_each(model, corrupted, metric, runs, progress=False, what="path patching")[0]


def patch_path_senders(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    receiver: Receiver | Sequence[Receiver] = "resid_final",
    *,
    senders: str = "heads",
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_path`` from each head (``senders="heads"``: (L, H)) or each MLP
    (``senders="mlp"``: (L,)) to ``receiver``: by default each component's direct effect on
    the output. NaN where the sender is not before every receiving head."""
    paths = _Paths(model)
    receivers = paths.receivers(receiver)
    if senders not in ("heads", "mlp"):
        raise ValueError(f"senders={senders!r} is not known; choose 'heads' or 'mlp'")
    n_layer, n_head = len(paths.where), paths.where.n_head(0, "self")
    shape = (n_layer, n_head) if senders == "heads" else (n_layer,)
    heads = range(n_head) if senders == "heads" else ["mlp"]
    cells = [(layer, head) for layer in range(n_layer) for head in heads]
    order = [paths.before([c], receivers) for c in cells]
    with torch.no_grad(), eval_mode(model):
        metric = paths.cache(clean, corrupted, metric, normalize)
        runs = [paths.hooks(paths.delta([c]), receivers) for c in compress(cells, order)]
        what = f"path patching: each {senders.rstrip('s')} → receiver"
        values = run_each(model, corrupted, metric, runs, progress=progress, what=what)
    return _fill(shape, order, values)


def patch_path_receivers(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    sender: Sender | Sequence[Sender],
    *,
    component: str = "q",
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_path`` from ``sender`` to each head's ``component`` (``"q"`` | ``"k"`` |
    ``"v"``): (L, H), or (L, H_kv) for k and v with grouped-query attention. NaN in the
    layers up to the sender's (nothing there reads its write); TransformerLens's
    ``get_act_patch_direct_path`` puts 0.0 there."""
    paths = _Paths(model)
    senders = paths.senders(sender)
    if component not in COMPONENTS:
        raise ValueError(f"component={component!r} is not known; choose one of {COMPONENTS}")
    attn = paths.where.blocks[0].attn
    n_head = attn.n_head if component == "q" else attn.n_kv_head
    shape = (len(paths.where), n_head)
    cells = [(layer, head, component) for layer in range(shape[0]) for head in range(n_head)]
    order = [paths.before(senders, [c]) for c in cells]
    with torch.no_grad(), eval_mode(model):
        metric = paths.cache(clean, corrupted, metric, normalize)
        delta = paths.delta(senders)
        runs = [paths.hooks(delta, [c]) for c in compress(cells, order)]
        what = f"path patching: sender → each head's {component}"
        values = run_each(model, corrupted, metric, runs, progress=progress, what=what)
    return _fill(shape, order, values)


class _Paths:
    """A model's senders and receivers, the two cached runs, and the hooks of one path."""

    def __init__(self, model) -> None:
        self.model, self.where = model, _one_prenorm_stack(model)

    def senders(self, spec) -> list[tuple[int, Any]]:
        specs = [spec] if _is_single(spec, 2) else _listed(spec)
        if not specs or not all(_is_single(s, 2) for s in specs):
            raise ValueError(
                f"sender={spec!r} is not known: give (layer, head), (layer, 'mlp') or a "
                "non-empty list of them"
            )
        for layer, head in specs:
            self.where.check_layer(layer)
            if head != "mlp":
                self.where.check_head(layer, head, "self")
        return specs

    def receivers(self, spec) -> list[Any]:
        specs = [spec] if spec == "resid_final" or _is_single(spec, 3) else _listed(spec)
        if not specs:
            raise ValueError("receiver: give 'resid_final' or at least one (layer, head, 'q')")
        for r in specs:
            if r == "resid_final":
                continue
            if not _is_single(r, 3) or r[2] not in COMPONENTS:
                raise ValueError(
                    f"receiver {r!r} is not known: give 'resid_final' or (layer, head, c) with "
                    f"c one of {COMPONENTS}"
                )
            attn = self.where.blocks[self.where.check_layer(r[0])].attn
            n = attn.n_head if r[2] == "q" else attn.n_kv_head
            if not isinstance(r[1], int) or isinstance(r[1], bool) or not 0 <= r[1] < n:
                raise ValueError(
                    f"receiver {r!r}: head {r[1]!r} is out of range; layer {r[0]} has {n} "
                    f"{'query' if r[2] == 'q' else 'key/value'} heads (0 to {n - 1})"
                )
        return specs

    @staticmethod
    def before(senders, receivers) -> bool:
        last = max(layer for layer, _ in senders)
        return all(r == "resid_final" or r[0] > last for r in receivers)

    def check_order(self, senders, receivers) -> None:
        if not self.before(senders, receivers):
            raise ValueError(
                f"no path from {senders} to {receivers}: a head of layer l reads the stream "
                "entering block l, so every sender must be in an earlier layer than every "
                "receiving head"
            )

    def cache(self, clean, corrupted, metric, normalize) -> Metric:
        """Run both inputs, caching every layer's z and mlp_out (under the caller's no-grad,
        eval-mode context); the metric, normalized when asked."""
        check_inputs(clean, corrupted)
        n = len(self.where)
        names = [f"blocks.{i}.{p}" for i in range(n) for p in ("attn.hook_z", "hook_mlp_out")]
        (clean_out, self.clean), (bad_out, self.corrupted) = (
            call(self.model.run_with_cache, x, names=names) for x in (clean, corrupted)
        )
        if not normalize:
            return metric
        return normalized(metric, scalar(metric(clean_out)), scalar(metric(bad_out)))

    def delta(self, senders) -> Tensor:
        """Σ_s (w_s(clean) − w_s(corrupted)), (B, T, C)."""
        total = 0
        for layer, head in senders:
            if head == "mlp":
                name = f"blocks.{layer}.hook_mlp_out"
                total = total + self.clean[name] - self.corrupted[name]
                continue
            name, attn = f"blocks.{layer}.attn.hook_z", self.where.blocks[layer].attn
            d = attn.head_dim
            w_o = effective_weight(attn.out_proj)  # W^O (+ LoRA's update, nn/lora.py)
            w_o = w_o[:, head * d : (head + 1) * d]  # (C, D): W^O_h, by rows
            total = (
                total + (self.clean[name][:, :, head] - self.corrupted[name][:, :, head]) @ w_o.T
            )
        return total

    def hooks(self, delta: Tensor, receivers) -> list:
        hooks, by_layer = [], {}
        for r in receivers:
            if r == "resid_final":
                last = f"blocks.{len(self.where) - 1}.hook_resid_post"
                hooks.append((last, lambda x, hook: x + delta))
            else:
                by_layer.setdefault(r[0], {}).setdefault(r[2], []).append(r[1])
        for layer, parts in by_layer.items():
            block, seen = self.where.blocks[layer], {}
            hooks.append((f"blocks.{layer}.hook_resid_pre", _keep(seen)))
            for c, heads in parts.items():
                hooks.append(
                    (f"blocks.{layer}.attn.hook_{c}", _input_from(block, seen, delta, c, heads))
                )
        return hooks


def _keep(seen: dict):
    def keep(x: Tensor, hook) -> None:
        seen["resid_pre"] = x

    return keep


def _input_from(block, seen: dict, delta: Tensor, component: str, heads: list[int]):
    """Replace ``heads`` of q, k or v (B, T, n, D) by their value on norm1(r + Δ)."""

    def patch(x: Tensor, hook) -> Tensor:
        q, k, v = block.attn.self_projections(block.ln1(seen["resid_pre"] + delta))
        u = {"q": q, "k": k, "v": v}[component].reshape(x.shape)
        x = x.clone()
        x[:, :, heads] = u[:, :, heads]
        return x

    return patch


def _one_prenorm_stack(model) -> Stack:
    where = find_stack(model, None)
    if where.paired:
        raise ValueError(
            "path patching works on a model of one stack (a decoder or an encoder); "
            f"{type(model).__name__} has an encoder and a decoder"
        )
    if not all(getattr(block, "norm_first", False) for block in where.blocks):
        raise ValueError(
            "path patching needs pre-norm blocks (norm_first=True), where a component's write "
            "reaches the stream unchanged; this model's blocks are post-norm, which pass each "
            "write through a norm"
        )
    return where


def _listed(spec) -> list:
    """A list or tuple of specs as a list; anything else as one spec (refused by the caller)."""
    return list(spec) if isinstance(spec, list | tuple) else [spec]


def _is_single(spec, n: int) -> bool:
    return isinstance(spec, tuple) and len(spec) == n and isinstance(spec[0], int)


def _fill(shape: tuple, order: list[bool], values: Tensor) -> Tensor:
    out = torch.full(shape, float("nan"), dtype=values.dtype if values.numel() else torch.float32)
    out.view(-1)[torch.tensor(order, dtype=torch.bool)] = values
    return out
