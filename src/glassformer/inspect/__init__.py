"""Look inside a transformer (notes: the attention matrix, the masks, the residual stream).

    from glassformer.inspect import capture, plot_attention, trace, format_trace

    with capture(model) as rec:            # attention weights, masks, Q/K/V, residual stream
        out = model(input_ids)
    plot_attention(rec, "attention.png")   # PNG pictures (matplotlib: glassformer[plot])
    print(format_trace(trace(model, input_ids)))   # the forward pass, formula by formula
    plot_graph(attention_graphs(model), "graph.png", t=8)   # the GNN view: each layer's graph

Everything shown is what the model computed, read at its hook points (glassformer.nn.hooks,
``model.run_with_cache``); nothing here computes the forward pass a second time.

Modules: records (what is recorded), capture (the context manager and the Recording), taps
(the hook functions that make the records), plots (the pictures), positions (the
positional-encoding matrix), graph_view and graph_plots (the GNN view: attention graphs, learned
attention as a weighted graph, receptive fields), circuit_plots (per-head attribution, logit
lens, singular values and patching, drawn from plain tensors), trace and steps (the traced
forward pass), readout (its numbers), inputs (a text encoded as the model was trained on it),
selection and _draw (helpers of the pictures).
"""

from .capture import Recording, capture
from .circuit_plots import (
    plot_head_attribution,
    plot_logit_lens,
    plot_patching,
    plot_singular_values,
)
from .graph_plots import plot_attention_graph, plot_graph, plot_receptive_field
from .graph_view import attention_graphs, attention_patterns, receptive_grid, weighted_edges
from .plots import Picture, plot_attention, plot_head, plot_masks
from .records import AttentionRecord, ResidualRecord, StackRecord
from .stream_plots import plot_positional, plot_residual
from .trace import Step, format_trace, trace

__all__ = [
    "AttentionRecord",
    "Picture",
    "Recording",
    "ResidualRecord",
    "StackRecord",
    "Step",
    "attention_graphs",
    "attention_patterns",
    "capture",
    "format_trace",
    "plot_attention",
    "plot_attention_graph",
    "plot_graph",
    "plot_head",
    "plot_head_attribution",
    "plot_logit_lens",
    "plot_masks",
    "plot_patching",
    "plot_positional",
    "plot_receptive_field",
    "plot_residual",
    "plot_singular_values",
    "receptive_grid",
    "trace",
    "weighted_edges",
]
