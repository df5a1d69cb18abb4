"""Attention graphs written as text, for configs, checkpoints and the command line.

One graph:

    full | causal | self | window:W[:causal] | dilated:W:D[:causal] | strided:L
    global:I[:J...] | random:R[:SEED][:causal] | bigbird:W:G:R[:SEED] | band:BEFORE:AFTER:D

combined with ``|`` (union), ``&`` (intersection) and parentheses, e.g.
``window:64|global:0``. A graph given by its edges is a JSON object,
``{"edges": [[sources...], [targets...]], "num_nodes": N}``, and so are unions and
intersections that contain one (``{"union": [...]}``, ``{"intersection": [...]}``).

A graph per layer: a list with one entry per layer, or text with layers separated by ``,`` and
``*N`` repeating one N times: ``window:64*4,full*2`` is a window of 64 in layers 1-4 and full
attention in layers 5-6. ``None`` (or ``full``) keeps dense attention.
"""

from __future__ import annotations

import math
import re

import torch

from .graph import AttentionGraph, Intersection, Union
from .patterns import (
    Band,
    bigbird,
    causal,
    dilated,
    from_edge_index,
    full,
    global_tokens,
    random_keys,
    self_loops,
    sliding_window,
    strided,
)

__all__ = ["layer_graphs", "parse", "parse_layers"]

GRAMMAR = (
    "full, causal, self, window:W[:causal], dilated:W:D[:causal], strided:L, global:I[:J...], "
    "random:R[:SEED][:causal], bigbird:W:G:R[:SEED], band:BEFORE:AFTER:D, combined with | "
    "(union), & (intersection) and parentheses"
)


def parse(spec) -> AttentionGraph:
    """The graph a spec describes (an AttentionGraph is returned as it is)."""
    if isinstance(spec, AttentionGraph):
        return spec
    if isinstance(spec, dict):
        return _from_object(spec)
    if not isinstance(spec, str):
        raise ValueError(f"an attention graph is text ({GRAMMAR}) or an object, got {spec!r}")
    tokens = re.findall(r"[|&()]|[^|&()\s]+", spec)
    if not tokens:
        raise ValueError(f"empty attention graph spec {spec!r}; use one of: {GRAMMAR}")
    graph, rest = _union(tokens, spec)
    if rest:
        raise ValueError(f"attention graph {spec!r}: unexpected {''.join(rest)!r}")
    return graph


def parse_layers(spec) -> list:
    """A per-layer spec as a list of single-graph specs (None stays None)."""
    if spec is None or isinstance(spec, AttentionGraph | dict):
        return [spec]
    if isinstance(spec, list | tuple):
        return list(spec)
    if not isinstance(spec, str):
        raise ValueError(f"an attention graph spec must be text or a list, got {spec!r}")
    layers = []
    for item in spec.split(","):
        m = re.fullmatch(r"\s*(.+?)\s*\*\s*(\d+)\s*", item)
        body, times = (m.group(1), int(m.group(2))) if m else (item.strip(), 1)
        if times < 1:
            raise ValueError(f"attention graph {spec!r}: a repeat count must be >= 1")
        layers += [body] * times
    return layers


def layer_graphs(spec, n_layer: int, what: str = "attention_graph") -> list:
    """One AttentionGraph (or None: dense attention) per layer, from one spec for all layers
    or one per layer."""
    layers = parse_layers(spec)
    if len(layers) == 1:
        layers = layers * n_layer
    if len(layers) != n_layer:
        raise ValueError(
            f"{what}: {len(layers)} graphs for {n_layer} layers; give one graph for all layers "
            f"or exactly {n_layer} (e.g. 'window:64*{max(n_layer - 1, 1)},full')"
        )
    out = []
    for layer in layers:
        try:
            g = None if layer is None else parse(layer)
        except ValueError as err:
            raise ValueError(f"{what}: {err}") from None
        out.append(None if g == full() else g)
    return out


# A small recursive-descent parser: union := inter ('|' inter)*, inter := atom ('&' atom)*
def _union(tokens, spec):
    return _chain(tokens, spec, "|", _intersection, Union)


def _intersection(tokens, spec):
    return _chain(tokens, spec, "&", _atom, Intersection)


def _chain(tokens, spec, op: str, operand, combine):
    """operand (op operand)*: one graph, or their union / intersection; and the tokens left."""
    parts, rest = [], tokens
    while True:
        g, rest = operand(rest, spec)
        parts.append(g)
        if not rest or rest[0] != op:
            break
        rest = rest[1:]
    return (parts[0] if len(parts) == 1 else combine(*parts)), rest


def _atom(tokens, spec):
    if not tokens:
        raise ValueError(f"attention graph {spec!r} ends too early; use: {GRAMMAR}")
    head, rest = tokens[0], tokens[1:]
    if head == "(":
        g, rest = _union(rest, spec)
        if not rest or rest[0] != ")":
            raise ValueError(f"attention graph {spec!r}: a '(' is not closed")
        return g, rest[1:]
    return _named(head, spec), rest


def _named(text: str, spec: str) -> AttentionGraph:
    name, *args = text.split(":")
    is_causal = bool(args) and args[-1] == "causal"
    if is_causal:
        args = args[:-1]
    try:
        nums = [_number(a) for a in args]
        graph = _BUILDERS[name](nums, is_causal)
    except KeyError:
        raise ValueError(
            f"attention graph {spec!r}: unknown pattern {name!r}; use: {GRAMMAR}"
        ) from None
    except (ValueError, TypeError) as err:
        raise ValueError(f"attention graph {spec!r}: {text!r}: {err}; use: {GRAMMAR}") from None
    return graph


def _number(a: str):
    if a == "inf":
        return math.inf
    if not re.fullmatch(r"\d+", a):
        raise ValueError(f"{a!r} is not a whole number >= 0")
    return int(a)


def _args(nums, low: int, high: int):
    if not low <= len(nums) <= high:
        want = low if low == high else f"{low} to {high}"
        raise ValueError(f"takes {want} numbers, got {len(nums)}")
    return nums


def _no_causal(is_causal: bool, name: str) -> None:
    if is_causal:
        raise ValueError(f"{name} has no causal form; intersect it with causal (…&causal)")


def _plain(builder, n_args: int):
    def build(nums, is_causal):
        _no_causal(is_causal, builder.__name__)
        return builder(*_args(nums, n_args, n_args))

    return build


_BUILDERS = {
    "full": _plain(full, 0),
    "causal": _plain(causal, 0),
    "self": _plain(self_loops, 0),
    "window": lambda n, c: sliding_window(*_args(n, 1, 1), causal=c),
    "dilated": lambda n, c: dilated(*_args(n, 2, 2), causal=c),
    "strided": _plain(strided, 1),
    "global": lambda n, c: (_no_causal(c, "global"), global_tokens(_args(n, 1, 1 << 20)))[1],
    "random": lambda n, c: random_keys(*_args(n, 1, 2), causal=c),
    "bigbird": lambda n, c: (_no_causal(c, "bigbird"), bigbird(*_args(n, 3, 4)))[1],
    "band": lambda n, c: (_no_causal(c, "band"), Band(*_args(n, 3, 3)))[1],
}


def _from_object(spec: dict) -> AttentionGraph:
    keys = set(spec)
    if keys == {"edges", "num_nodes"}:
        edges = spec["edges"]
        if not (isinstance(edges, list) and len(edges) == 2):
            raise ValueError("an edge graph's 'edges' must be [[sources...], [targets...]]")
        edge_index = torch.tensor(edges, dtype=torch.long, device="cpu")  # also under a meta device
        return from_edge_index(edge_index, spec["num_nodes"])
    if keys == {"union"} or keys == {"intersection"}:
        ((op, parts),) = spec.items()
        if not isinstance(parts, list) or not parts:
            raise ValueError(f"{op!r} must be a non-empty list of graphs")
        graphs = [parse(p) for p in parts]
        return Union(*graphs) if op == "union" else Intersection(*graphs)
    raise ValueError(
        "an attention graph object has the keys 'edges' and 'num_nodes', or 'union' or "
        f"'intersection'; got {sorted(keys)}"
    )
