"""Look inside a transformer (notes: the attention matrix, the masks, the residual stream).

    from glassformer.inspect import capture, plot_attention, trace, format_trace

    with capture(model) as rec:            # attention weights, masks, Q/K/V, residual stream
        out = model(input_ids)
    plot_attention(rec, "attention.png")   # PNG pictures (matplotlib: glassformer[plot])
    print(format_trace(trace(model, input_ids)))   # the forward pass, formula by formula

Everything shown is what the model computed, read at its hook points (glassformer.nn.hooks,
``model.run_with_cache``); nothing here computes the forward pass a second time.

Modules: records (what is recorded), capture (the context manager and the Recording), taps
(the hook functions that make the records), plots (the pictures), positions (the
positional-encoding matrix), trace and steps (the traced forward pass), readout (its numbers),
selection and _draw (helpers of the pictures).
"""

from .capture import Recording, capture
from .plots import (
    Picture,
    plot_attention,
    plot_head,
    plot_masks,
    plot_positional,
    plot_residual,
)
from .records import AttentionRecord, ResidualRecord, StackRecord
from .trace import Step, format_trace, trace

__all__ = [
    "AttentionRecord",
    "Picture",
    "Recording",
    "ResidualRecord",
    "StackRecord",
    "Step",
    "capture",
    "format_trace",
    "plot_attention",
    "plot_head",
    "plot_masks",
    "plot_positional",
    "plot_residual",
    "trace",
]
