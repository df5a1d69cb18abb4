"""The senders, receivers and runs of path patching (path_patching.py): a model's senders and
receivers checked, the two cached runs, each sender's write Δ, and the hooks that let a
receiver read r + Δ. Into the final stream alone no block runs again: the corrupted run's
final stream plus Δ goes through the final norm and the head (_resume.py ``finish``)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..nn.lora import effective_weight
from ._patch_runs import Metric, check_inputs, progress_bar, rescaled, run_each, stacked, values_of
from ._resume import Resumed, evaluate
from ._sites import Stack, call, find_stack

__all__ = ["COMPONENTS", "Paths"]

COMPONENTS = ("q", "k", "v")


class Paths:
    """A model's senders and receivers, the two cached runs, and the hooks of one path."""

    def __init__(self, model, metric: Metric) -> None:
        self.model, self.where, self.metric = model, _one_prenorm_stack(model), metric

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

    def cache(self, clean, corrupted) -> None:
        """Run both inputs, caching every layer's z and mlp_out and the final stream (under
        the caller's no-grad, eval-mode context)."""
        check_inputs(clean, corrupted)
        n = len(self.where)
        names = [f"blocks.{i}.{p}" for i in range(n) for p in ("attn.hook_z", "hook_mlp_out")]
        names.append(f"blocks.{n - 1}.hook_resid_post")
        clean_out, self.clean = call(self.model.run_with_cache, clean, names=names)
        self.clean_value = self.metric(clean_out)  # for normalize; the logits are not kept
        self.runs = Resumed(self.model, corrupted, names)
        self.corrupted = self.runs.cache

    def run(self, deltas, receivers, *, progress, what: str, total: int = 1) -> Tensor:
        """The metric with each of ``deltas`` sent to ``receivers``: (n,) or (n, B). Into the
        final stream alone, no block runs again: norm_final(x_L + Δ), then the head."""
        if receivers == ["resid_final"] and self.runs.mode != "whole":
            final = self.corrupted[f"blocks.{len(self.where) - 1}.hook_resid_post"]
            bar, values = progress_bar(total, what, progress), []
            try:
                for delta in deltas:
                    out = self.runs.finish(final + delta)
                    values.append(values_of(evaluate(self.metric, out), self.runs.batch))
                    bar.update(1)
            finally:
                bar.close()
            return stacked(values)
        start = min((r[0] for r in receivers if r != "resid_final"), default=len(self.where))
        start = start % len(self.where)  # the final stream only, on a model that runs whole: 0
        jobs = ((start, 0, self.hooks(delta, receivers)) for delta in deltas)
        return run_each(self.runs, self.metric, jobs, total, progress=progress, what=what)

    def each(self, delta: Tensor, receivers: list, *, progress, what: str) -> Tensor:
        """The metric with ``delta`` sent to each receiver alone, resumed at its layer."""
        jobs = ((r[0], 0, self.hooks(delta, [r])) for r in receivers)
        return run_each(self.runs, self.metric, jobs, len(receivers), progress=progress, what=what)

    def normalized(self, values: Tensor, metric: Metric, normalize: bool) -> Tensor:
        if not normalize:
            return values
        return rescaled(values, self.clean_value, metric(self.runs.out))

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
        q, k, v = block.attn.projections(block.ln1(seen["resid_pre"] + delta))
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
