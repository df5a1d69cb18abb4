"""What a view draws, as the JSON-ready data the explorer's page reads (data.py's layout),
from tensors the model already computed: a cache of one pass (``model.run_with_cache``), a
trace's steps (glassformer.inspect.trace), a grid of numbers (a patching result of
glassformer.circuits). Rounded as data.py rounds: attention weights to 7 decimals, every
other value to 6 significant digits.

    cache_data(cache, "pattern", batch=0)    tokens + attention (L, H, T, S) of every stack
    cache_data(cache, "residual")            tokens + ‖update‖ and ‖x‖ after each sub-layer
    cache_data(cache, "lens", k=5)           tokens + the logit lens at every position
    trace_data(steps, tokens)                each step's formula and tensors (example 0)
    grid_data(values, rows, columns, ...)    a (R, C) or (P, R, C) grid with its labels
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from .. import circuits
from ..inspect.graph_view import stacks_of
from ..inspect.readout import NO_BATCH
from .data import attention_entry, ids_key, lens_data, model_info, rounded

__all__ = ["WHATS", "cache_data", "grid_data", "trace_data"]

WHATS = ("pattern", "residual", "lens")  # what a cache shows
MAX_VALUES = 500_000  # numbers a trace view embeds (a page of a few MB at most)
SUBLAYERS = (  # (name, what it writes, the stream after it) in a block's order
    ("self_attn", "attn_out", "resid_mid"),
    ("cross_attn", "cross_attn_out", "resid_mid_cross"),
    ("ff", "mlp_out", "resid_post"),
)


def cache_data(cache, what: str, *, batch: int = 0, tokens=None, k: int = 5) -> dict:
    """The data of view ``what`` (one of WHATS) of example ``batch`` of the pass ``cache``
    holds; ``tokens``: the labels of the positions (a list, or {stack: list}), by default
    the input ids the pass was given (``cache.inputs``) as the model's tokenizer names them."""
    if what not in WHATS:
        raise ValueError(f"what={what!r}: a cache shows one of {WHATS}")
    model = cache.model
    if model is None:
        raise ValueError(
            "this cache has no model (built by hand): show the cache of run_with_cache"
        )
    stacks = {name: _prefix(cache, name) for name in stacks_of(model)}
    size = _batch_size(cache)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch < size:
        raise ValueError(f"batch={batch!r}: the cache holds examples 0..{size - 1}")
    data = {"model": model_info(model), "tokens": _tokens(cache, stacks, batch, tokens)}
    if what == "pattern":
        data["attention"] = [
            _attention(cache, model, stack, prefix, kind, batch)
            for stack, prefix in stacks.items()
            for kind in ("self", "cross")
            if kind == "self" or _has(cache, f"{prefix}blocks.0.cross_attn.hook_pattern")
        ]
    elif what == "residual":
        data["residual"] = {s: _residual(cache, p, batch) for s, p in stacks.items()}
    else:
        lens = circuits.logit_lens(cache, k=min(k, model.config.vocab_size))
        data["lens"] = lens_data(lens, model.tokenizer, batch)
        stack = "decoder" if "decoder" in stacks else "encoder"
        data["predictions"] = {"kind": "none", "stack": stack}
        data["position"] = len(data["tokens"][stack]["tokens"]) - 1
    return data


def _prefix(cache, stack: str) -> str:
    """The start of the stack's hook point names: "" for a model of one stack, "encoder."."""
    return f"{stack}." if any(n.startswith(f"{stack}.blocks.") for n in cache) else ""


def _has(cache, name: str) -> bool:
    return dict.__contains__(cache, name)


def _batch_size(cache) -> int:
    sizes = [t.shape[0] for n, t in cache.items() if n.endswith(".hook_resid_pre")]
    return sizes[0] if sizes else next(iter(cache.values())).shape[0]


def _tokens(cache, stacks: dict, batch: int, given) -> dict:
    """{stack: {"tokens": labels, "ids": ids}} of example ``batch``."""
    model, inputs = cache.model, cache.inputs or {}
    found = {}
    for stack, prefix in stacks.items():
        ids = inputs.get(ids_key(stack, model))
        ids = [] if ids is None else ids[batch].tolist()
        length = len(ids) or _length(cache, prefix)
        labels = given.get(stack) if isinstance(given, dict) else given
        if labels is None:
            tok = getattr(model, "tokenizer", None)
            labels = [tok.id_to_token(i) if tok else str(i) for i in ids] or list(range(length))
        labels = [str(t) for t in labels]
        if len(labels) != length:
            raise ValueError(
                f"tokens: {len(labels)} labels for the {stack}'s {length} positions; give one "
                "label per position"
            )
        found[stack] = {"tokens": labels, "ids": ids}
    return found


def _length(cache, prefix: str) -> int:
    """The positions of a stack: T of its first cached stream or pattern."""
    for name, t in cache.items():
        if name.startswith(f"{prefix}blocks.") and name.endswith(
            ("hook_resid_pre", "hook_pattern")
        ):
            return t.shape[-2] if name.endswith("hook_pattern") else t.shape[1]
    raise ValueError("the cache holds no stream or pattern to count the positions by")


def _layers(cache, prefix: str, point: str, what: str) -> list[Tensor]:
    """cache[{prefix}blocks.{l}.{point}] of every layer l, or a ValueError naming the missing."""
    blocks = [n for n in cache if n.startswith(f"{prefix}blocks.")]
    n = 1 + max((int(name[len(prefix) :].split(".")[1]) for name in blocks), default=-1)
    names = [f"{prefix}blocks.{layer}.{point}" for layer in range(n)]
    missing = [name for name in names if not _has(cache, name)]
    if missing or not names:
        raise ValueError(
            f"the {what} view reads {prefix}blocks.{{l}}.{point} of every layer; not cached: "
            f"{missing[:3] or 'any block'}; run_with_cache(...) caches every point"
        )
    return [cache[name] for name in names]


def _attention(cache, model, stack: str, prefix: str, kind: str, batch: int) -> dict:
    """data.py's attention entry: weights (L, H, T, S), allowed rows of '0'/'1'."""
    sub = "attn" if kind == "self" else "cross_attn"
    weights = torch.stack(
        [w[batch] for w in _layers(cache, prefix, f"{sub}.hook_pattern", "pattern")]
    )
    L, H, T, S = weights.shape
    masks = [f"{prefix}blocks.{layer}.{sub}.hook_mask" for layer in range(L)]
    if all(_has(cache, name) for name in masks):  # (B or 1, H or 1, T, S) bool each
        allowed = torch.stack(
            [cache[m][min(batch, cache[m].shape[0] - 1)].expand(H, T, S) for m in masks]
        )
    else:  # the mask was not cached: every cell is drawn as allowed
        allowed = torch.ones(L, H, T, S, dtype=torch.bool)
    return attention_entry(model, stack, kind, weights, allowed)


def _residual(cache, prefix: str, batch: int) -> list[dict]:
    """data.py's residual entries: each sub-layer's ‖update‖ (T,) and ‖x‖ after it."""
    n = len(_layers(cache, prefix, "hook_resid_post", "residual"))
    found = []
    for layer, (sublayer, update, after) in itertools.product(range(n), SUBLAYERS):
        name = f"{prefix}blocks.{layer}.hook_{update}"
        if not _has(cache, name):
            if sublayer == "cross_attn":
                continue
            raise ValueError(f"the residual view reads {name}; run_with_cache(...) caches it")
        found.append(
            {
                "layer": layer,
                "sublayer": sublayer,
                "update_norm": rounded(cache[name][batch].norm(dim=-1), sig=6),
                "after_norm": rounded(
                    cache[f"{prefix}blocks.{layer}.hook_{after}"][batch].norm(dim=-1), sig=6
                ),
            }
        )
    return found


def trace_data(steps, tokens=None) -> dict:
    """Each step of a trace (glassformer.inspect.trace) with its tensors at example 0, each
    as pages of (R, C) grids: a (T, C) stream is one page, a (H, T, S) pattern one per head."""
    if not steps:
        raise ValueError("steps: the trace is empty (trace(model, input_ids) gives its steps)")
    out, total = [], 0
    for step in steps:
        tensors = []
        for name, t in step.tensors.items():
            entry = _tensor(name, t)
            total += sum(len(r) for page in entry["values"] for r in page)
            tensors.append(entry)
        out.append(
            {"where": step.where, "name": step.name, "formula": step.formula, "tensors": tensors}
        )
    if total > MAX_VALUES:
        raise ValueError(
            f"the trace holds {total} values, more than a view embeds ({MAX_VALUES}): trace one "
            "layer (trace(..., layer=l)) or a shorter input"
        )
    return {"trace": {"steps": out, "tokens": None if tokens is None else [str(t) for t in tokens]}}


def _tensor(name: str, t: Tensor) -> dict:
    """A tensor of a step at example 0 as pages of (R, C): its full shape, the index of each
    page (Python's, e.g. "0, 2" for head 2 of example 0) and how many of R, C it has."""
    t = t.detach().cpu()
    t = t.double() if t.dtype == torch.bool else t
    batched = not (name in NO_BATCH and t.dim() == 2) and t.dim() > 0
    x = t[0] if batched else t
    dims = min(x.dim(), 2)
    lead = x.shape[: x.dim() - dims]
    pages = [
        ", ".join(map(str, ([0] if batched else []) + list(i)))
        for i in itertools.product(*(range(n) for n in lead))
    ]
    grids = x.reshape(-1, *([1] * (2 - dims)), *x.shape[x.dim() - dims :])  # (P, R, C)
    return {
        "name": name,
        "shape": list(t.shape),
        "dims": dims,
        "pages": pages,
        "values": _with_infinities(grids),
    }


def _with_infinities(t: Tensor) -> list:
    """rounded(t, sig=6), each value that is not finite written as JavaScript's Number reads
    it back: "-Infinity" (a masked score, Eq. 2), "Infinity", "NaN"."""
    finite = torch.isfinite(t)
    values = rounded(torch.where(finite, t, torch.zeros_like(t)), sig=6)
    for index in (~finite).nonzero().tolist():
        row, v = values, t[tuple(index)].item()
        for i in index[:-1]:
            row = row[i]
        row[index[-1]] = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    return values


def grid_data(
    values, *, rows=None, columns=None, pages=None, axes=None, label="value", title=""
) -> dict:
    """A grid (R, C), or (P, R, C) with a control for P, and the labels of its axes."""
    t = torch.as_tensor(values).detach().cpu()
    if t.dim() not in (2, 3):
        raise ValueError(
            f"values: a grid is (rows, columns) or (pages, rows, columns); got shape "
            f"{tuple(t.shape)} (a patching grid of several prompts: pick one, grid[0])"
        )
    t = t if t.dim() == 3 else t[None]
    P, R, C = t.shape
    axes = list(axes or (["page"] if P > 1 else []) + ["layer", "position"])
    if len(axes) == 2:
        axes = [None, *axes]
    if len(axes) != 3 or (P > 1 and axes[0] is None):
        raise ValueError(f"axes={axes!r}: name the axes of the grid, e.g. ('layer', 'position')")
    names = {
        "pages": (pages, P, axes[0]),
        "rows": (rows, R, axes[1]),
        "columns": (columns, C, axes[2]),
    }
    labels = {}
    for arg, (given, n, axis) in names.items():
        given = [f"{axis} {i}" for i in range(n)] if given is None else [str(x) for x in given]
        if len(given) != n:
            raise ValueError(f"{arg}: {len(given)} labels for {n} {axis}s; give one per {axis}")
        labels[arg] = given
    return {
        "grid": {
            "title": title,
            "label": label,
            "axes": axes,
            "pages": labels["pages"] if P > 1 else None,
            "rows": labels["rows"],
            "columns": labels["columns"],
            "values": rounded(t, sig=6),
        }
    }
