"""Attention as a graph (Formal Algorithms for Transformers, "Transformers as GNNs").

Attention is message passing: each query position receives the values of the key positions it
is joined to, weighted by the softmax of their scores. A transformer is a GNN on the fully
connected graph; sparse attention is a GNN on a sparse graph; each layer may use its own.

    cover.py      Cover: where the edges can be (of a union, of an intersection); listing them
                  without testing all T·S pairs
    graph.py      AttentionGraph: allows(i, j), mask, edge_index, num_edges, cover; | and &
    patterns.py   full, causal, sliding_window, dilated, strided, global_tokens, random_keys,
                  bigbird, self_loops, from_edge_index, from_adjacency, from_networkx
    spec.py       graphs as text ("window:64|global:0") and a graph per layer ("window:64*4,full*2")
    spec_text.py  a graph's spec written: the text that spec.py parses back, and graph equality
    receptive.py  which inputs each output depends on after a stack of layers
    kernel_choice.py  kernel_for: which attention kernel fits a graph (dense, local, edges)
    kernels/      attention that visits only the edges: ``local_attention``, a band of keys
                  per block of queries (O(T·w)), and ``edge_attention``, message passing over
                  an edge list (O(E·D))
"""

from .cover import Cover
from .graph import AttentionGraph, Intersection, Union
from .kernel_choice import KERNELS, band_is_edges, kernel_for
from .patterns import (
    Band,
    EdgeGraph,
    GlobalTokens,
    RandomKeys,
    bigbird,
    causal,
    dilated,
    from_adjacency,
    from_edge_index,
    from_networkx,
    full,
    global_tokens,
    random_keys,
    self_loops,
    sliding_window,
    strided,
)
from .receptive import receptive_field, receptive_fields
from .spec import layer_graphs, parse, parse_layers

__all__ = [
    "KERNELS",
    "AttentionGraph",
    "Band",
    "Cover",
    "EdgeGraph",
    "GlobalTokens",
    "Intersection",
    "RandomKeys",
    "Union",
    "band_is_edges",
    "bigbird",
    "causal",
    "dilated",
    "from_adjacency",
    "from_edge_index",
    "from_networkx",
    "full",
    "global_tokens",
    "kernel_for",
    "layer_graphs",
    "parse",
    "parse_layers",
    "random_keys",
    "receptive_field",
    "receptive_fields",
    "self_loops",
    "sliding_window",
    "strided",
]
