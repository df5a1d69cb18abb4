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
  final stream only, not into any later component. It runs no block again: the final stream
  of the corrupted run is kept, and each sender's Δ is added to it.

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
from ._patch_runs import Metric
from ._paths import COMPONENTS, Paths
from ._sites import Input, chosen

Subset = int | range | Sequence[int] | None  # layers=, heads= of a grid

__all__ = ["patch_path", "patch_path_receivers", "patch_path_senders"]

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
    all patched in the same run) taken from the clean run: a scalar tensor, or (B,) for a
    metric of one value per prompt. With grouped-query attention the head of a "k" or "v"
    receiver counts key/value heads."""
    paths = Paths(model, metric)
    senders, receivers = paths.senders(sender), paths.receivers(receiver)
    paths.check_order(senders, receivers)
    with torch.no_grad(), eval_mode(model):
        paths.cache(clean, corrupted)
        values = paths.run([paths.delta(senders)], receivers, progress=False, what="path patching")
        return paths.normalized(values, metric, normalize)[0] if normalize else values[0]


def patch_path_senders(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    receiver: Receiver | Sequence[Receiver] = "resid_final",
    *,
    senders: str = "heads",
    layers: Subset = None,
    heads: Subset = None,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_path`` from each head (``senders="heads"``: (L, H)) or each MLP
    (``senders="mlp"``: (L,)) to ``receiver``: by default each component's direct effect on
    the output, computed from the two cached runs without running any block again (the final
    stream is a sum: the sender's term is replaced). NaN where the sender is not before every
    receiving head. ``layers``, ``heads``: the senders asked for (an int, a range or a list;
    None: all), one entry per index in that order; a metric of one value per prompt puts the
    prompts first: (B, L, H)."""
    paths = Paths(model, metric)
    receivers = paths.receivers(receiver)
    if senders not in ("heads", "mlp"):
        raise ValueError(f"senders={senders!r} is not known; choose 'heads' or 'mlp'")
    if senders == "mlp" and heads is not None:
        raise ValueError(f"heads={heads!r}: senders='mlp' has no heads to choose")
    chosen_layers = chosen(layers, len(paths.where), "layers", "layers")
    n_head = paths.where.n_head(0, "self")
    picked = chosen(heads, n_head, "heads", "heads") if senders == "heads" else ["mlp"]
    shape = (len(chosen_layers), len(picked)) if senders == "heads" else (len(chosen_layers),)
    cells = [(layer, head) for layer in chosen_layers for head in picked]
    order = [paths.before([c], receivers) for c in cells]
    with torch.no_grad(), eval_mode(model):
        paths.cache(clean, corrupted)
        deltas = (paths.delta([c]) for c in compress(cells, order))
        what = f"path patching: each {senders.rstrip('s')} → receiver"
        values = paths.run(deltas, receivers, progress=progress, what=what, total=sum(order))
        values = paths.normalized(values, metric, normalize)
    return _fill(shape, order, values)


def patch_path_receivers(
    model,
    clean: Input,
    corrupted: Input,
    metric: Metric,
    sender: Sender | Sequence[Sender],
    *,
    component: str = "q",
    layers: Subset = None,
    heads: Subset = None,
    normalize: bool = False,
    progress: bool | None = None,
) -> Tensor:
    """``patch_path`` from ``sender`` to each head's ``component`` (``"q"`` | ``"k"`` |
    ``"v"``): (L, H), or (L, H_kv) for k and v with grouped-query attention. NaN in the
    layers up to the sender's (nothing there reads its write); TransformerLens's
    ``get_act_patch_direct_path`` puts 0.0 there. ``layers``, ``heads``: the receivers asked
    for, as in ``patch_path_senders``; each run resumes the corrupted run at the receiver's
    layer."""
    paths = Paths(model, metric)
    senders = paths.senders(sender)
    if component not in COMPONENTS:
        raise ValueError(f"component={component!r} is not known; choose one of {COMPONENTS}")
    attn = paths.where.blocks[0].attn
    n_head = attn.n_head if component == "q" else attn.n_kv_head
    chosen_layers = chosen(layers, len(paths.where), "layers", "layers")
    picked = chosen(heads, n_head, "heads", f"{component} heads")
    shape = (len(chosen_layers), len(picked))
    cells = [(layer, head, component) for layer in chosen_layers for head in picked]
    order = [paths.before(senders, [c]) for c in cells]
    with torch.no_grad(), eval_mode(model):
        paths.cache(clean, corrupted)
        delta = paths.delta(senders)
        what = f"path patching: sender → each head's {component}"
        values = paths.each(delta, list(compress(cells, order)), progress=progress, what=what)
        values = paths.normalized(values, metric, normalize)
    return _fill(shape, order, values)


def _fill(shape: tuple, order: list[bool], values: Tensor) -> Tensor:
    """The grid ``shape`` with ``values`` (n,) or (n, B) where ``order`` is True, NaN
    elsewhere; per prompt (B, *shape)."""
    dtype = values.dtype if values.numel() else torch.float32
    prompts = (values.shape[1],) if values.dim() == 2 else ()
    out = torch.full((len(order), *prompts), float("nan"), dtype=dtype)
    out[torch.tensor(order, dtype=torch.bool)] = values
    return out.T.reshape(*prompts, *shape) if prompts else out.reshape(shape)
