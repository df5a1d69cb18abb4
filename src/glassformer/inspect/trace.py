"""A traced walk through a forward pass: every step in order, with its formula, shapes and
a few values.

    steps = trace(model, input_ids)          # list of Step
    print(format_trace(steps))               # formulas, shapes, values (readout.py)
    steps[-1].value                          # == model(input_ids).logits

The model runs once, in eval mode without gradients, through ``run_with_cache``; each step
shows the tensors it computed, read at its hook points (glassformer.nn.hooks), beside the
formula they follow: x^(0) = W_e[:, x[n]] + W_p[:, n], then per block the norm, Q/K/V (Eq. 4,
Eq. 5 for cross-attention), the scores with the mask (Eq. 2), softmax (Eq. 3), the weighted
sum (Eq. 1), output projection, residual and feed-forward, then the final norm and the head
(steps.py). The last value is the model's output itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from ..models import (
    DecoderClassifier,
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
)
from ..models.base import eval_mode
from ..models.heads import ClassificationHead
from ..models.inputs import InputEmbedding
from .readout import format_values
from .steps import Masking, Step, Steps

__all__ = ["Step", "format_trace", "trace"]

LEGEND = "B batch, T length, S keys, C d_model, H heads, D head size, N_V vocabulary size"


def trace(
    model,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    decoder_input_ids: Tensor | None = None,
    decoder_attention_mask: Tensor | None = None,
    token_type_ids: Tensor | None = None,
    layer: int | None = None,
) -> list[Step]:
    """The steps of ``model``'s forward pass on ``input_ids`` (B, T), in order.

    ``layer`` keeps only that block's steps (in every stack) besides the input and output
    steps. The last step's value is the model's ``logits`` (DecoderLM, DecoderClassifier,
    EncoderMLM, EncoderClassifier, EncoderDecoder with ``decoder_input_ids``), or for an
    EncoderModel its ``pooled`` vector when it has a pooler, else its ``hidden_states``.
    """
    families = (DecoderLM, DecoderClassifier, EncoderModel, EncoderDecoder)
    if not isinstance(model, families):
        allowed = ", ".join(f.__name__ for f in families)
        raise ValueError(f"trace: model is a {type(model).__name__}; allowed {allowed}")
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
        raise ValueError("trace: input_ids must be a (B, T) tensor of token ids")
    depth = max(len(m.blocks) for m in _stacks(model))
    if layer is not None and (isinstance(layer, bool) or layer not in range(depth)):
        raise ValueError(f"layer={layer!r} is out of range: allowed 0..{depth - 1}")
    kwargs = {}
    if isinstance(model, EncoderDecoder):
        if decoder_input_ids is None:
            raise ValueError("trace: an EncoderDecoder needs decoder_input_ids (B, T)")
        kwargs = dict(
            decoder_input_ids=decoder_input_ids, decoder_attention_mask=decoder_attention_mask
        )
    elif isinstance(model, EncoderModel):
        kwargs = dict(token_type_ids=token_type_ids)
    with eval_mode(model), torch.no_grad(), _unhooked_reads(model) as read:
        _, cache = model.run_with_cache(input_ids, attention_mask, names=_wanted, **kwargs)
    steps = Steps(cache, read, layer)
    if isinstance(model, DecoderLM | DecoderClassifier):
        masking = Masking(causal=True, keys=attention_mask is not None)
        steps.embed(model, "input")
        steps.stack(model, "", masking)
        if isinstance(model, DecoderLM):
            steps.lm_head(model, model.config.activation)
        else:
            _classifier_head(steps, model)
    elif isinstance(model, EncoderModel):
        steps.embed(model, "input")
        steps.stack(model, "", Masking(causal=False, keys=attention_mask is not None))
        _encoder_head(steps, model)
    else:
        source = Masking(causal=False, keys=attention_mask is not None)
        steps.embed(model.encoder, "encoder input")
        steps.stack(model.encoder, "encoder", source)
        steps.embed(model.decoder, "decoder input")
        target = Masking(causal=True, keys=decoder_attention_mask is not None)
        steps.stack(model.decoder, "decoder", target, cross=source)
        steps.lm_head(model, model.config.activation)
    return steps.steps


def format_trace(steps: list[Step], values: bool = True) -> str:
    """The steps as text: number, place and name; the formula; each tensor's shape; with
    ``values``, a few numbers of each tensor at the last position and the last query's
    attention row in every head (see ``readout``)."""
    lines = [f"shapes: {LEGEND}", ""]
    for i, step in enumerate(steps, 1):
        lines.append(f"{i:3d}. {step.where} · {step.name}")
        lines.append(f"     {step.formula}")
        shapes = "  ".join(f"{name} {tuple(t.shape)}" for name, t in step.tensors.items())
        lines.append(f"     {shapes}")
        if values:
            lines += [f"     {line}" for line in format_values(step)]
    return "\n".join(lines)


def _encoder_head(steps: Steps, model: EncoderModel) -> None:
    if isinstance(model, EncoderMLM):
        steps.lm_head(model, model.config.activation)
    elif isinstance(model, EncoderClassifier):
        _classifier_head(steps, model)
    elif model.pooler is not None:
        steps.pool(model.hook_pool, model.config.pooling)
        formula = "pooled = tanh(W v + b)"
        steps.emit("head", "pooler", formula, pooled=steps.at(model.hook_pooled))


def _classifier_head(steps: Steps, model: ClassificationHead) -> None:
    """Pool, BERT's pooler where there is one, and the classifier (without b_c on a decoder,
    as Hugging Face's ``score``)."""
    steps.pool(model.hook_pool, model.config.pooling)
    if model.pooler is not None:
        steps.emit("head", "pooler", "v ← tanh(W v + b)", v=steps.at(model.hook_pooled))
    bias = " + b_c" if model.classifier.bias is not None else ""
    formula = f"logits = W_c v{bias}  (one score per class)"
    steps.emit("head", "classifier", formula, logits=steps.at(model.hook_logits))


def _wanted(name: str) -> bool:
    """Every hook point but each head's term z_h W^O_h: the trace does not show it, and asking
    for it would change how the output projection is summed."""
    return not name.endswith("hook_result")


@contextmanager
def _unhooked_reads(model) -> Iterator[dict[InputEmbedding, object]]:
    """The one thing a trace shows that is not an activation and so has no hook point: each
    input embedding's rotary tables (cos, sin), read as its ``embed_input`` returns them."""
    read: dict[InputEmbedding, object] = {}
    owners = [m for m in model.modules() if isinstance(m, InputEmbedding)]

    def reading(owner: InputEmbedding):
        embed_input = owner.embed_input  # the bound method, as the class defines it

        def wrapped(*args, **kwargs):
            out = embed_input(*args, **kwargs)
            read[owner] = out[1]  # (x, rotary tables or None)
            return out

        return wrapped

    before = [owner.__dict__.get("embed_input") for owner in owners]  # None: the method
    for owner in owners:
        owner.embed_input = reading(owner)  # an instance attribute hides the method
    try:
        yield read
    finally:
        for owner, previous in zip(owners, before, strict=True):
            if previous is None:
                del owner.embed_input
            else:
                owner.embed_input = previous


def _stacks(model) -> list:
    if isinstance(model, EncoderDecoder):
        return [model.encoder, model.decoder]
    return [model]  # DecoderLM, DecoderClassifier, EncoderModel: it holds blocks and ln_final
