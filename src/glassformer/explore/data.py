"""What the explorer shows for one input, as plain JSON-ready data: every number is one the
model computed, read at its hook points (glassformer.inspect.capture, glassformer.circuits).

    explore_data(model, text, target=None, top_k=5) -> dict

    model       the model's family, sizes and how many stacks and heads it has
    tokens      each stack's tokens as the tokenizer split them, with their ids
    attention   per stack and kind (self, cross): A (Eq. 1) of every layer and head, (L, H, T, S),
                the mask applied on the same axes (1 = may attend; causal, padding and the
                layer's attention graph together) and the layer's graph as its spec
    residual    ‖update‖ of each sub-layer (attention, feed-forward) at each position
    lens        the top-k tokens read from the stream after each block, at each position
    attribution each head's direct share of the predicted token's logit at one position
    predictions the next-token top-k at each position (decoders), the <MASK> candidates (masked
                LMs) or the class probabilities (classifiers)

Attention weights are rounded to 7 decimals (|error| <= 5e-8); other values to 6 significant
digits. The page (explorer.js) draws nothing it does not find here.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import circuits
from ..generation.inputs import check_text
from ..inspect import capture
from ..inspect.graph_plots import spec_text
from ..inspect.graph_view import attention_graphs
from ..inspect.inputs import analysed_position, encode_inputs
from ..models import DecoderClassifier, DecoderLM, EncoderDecoder, EncoderMLM, EncoderModel
from ..models.heads import ClassificationHead
from ..models.tokens import drop_undefined_ids

__all__ = ["explore_data", "lens_data", "model_info", "rounded"]

KINDS = (DecoderLM, DecoderClassifier, EncoderModel, EncoderDecoder)
WHAT = ("the text", "the target")  # how error messages name the inputs


def model_info(model) -> dict:
    """The model's family and sizes, and what the page asks for (a target for an
    encoder-decoder)."""
    c = model.config
    return {
        "class": type(model).__name__,
        "task": _task(model),
        "n_layer": c.n_layer,
        "n_head": c.n_head,
        "d_model": c.d_model,
        "max_len": c.max_len,
        "vocab_size": c.vocab_size,
        "norm_first": c.norm_first,
        "positional": c.positional,
        "attention_scores": c.attention_scores,
        "converted_from": c.extra.get("converted_from"),
        "needs_target": isinstance(model, EncoderDecoder),
    }


def explore_data(model, text: str, target: str | None = None, *, top_k: int = 5) -> dict:
    """Run ``model`` on ``text`` (an encoder-decoder's source; ``target`` its decoder input,
    default the greedy output) and gather every view of the page. Raises ValueError, with a
    message for the user, for an input the model cannot take (longer than ``max_len``)."""
    if not isinstance(model, KINDS):
        raise ValueError(f"the explorer runs glassformer models, not a {type(model).__name__}")
    check_text(text, "the text")  # the rule of ``predict`` too: empty or blank is refused
    inputs = encode_inputs(model, text, target or None, None, what=WHAT)
    model.eval()
    with torch.inference_mode(), capture(model) as rec:
        out = model(**inputs.kwargs)
    data = {
        "model": model_info(model),
        "input": {"text": text, "target": target},
        "tokens": {
            stack: {"tokens": labels, "ids": inputs.kwargs[ids_key(stack, model)][0].tolist()}
            for stack, labels in inputs.tokens.items()
        },
        "attention": _attention(rec, model),
        "residual": _residual(rec),
        "predictions": _predictions(model, out, inputs, top_k),
    }
    data["position"] = analysed_position(model, inputs, _positions(inputs), None)
    data["lens"], data["attribution"] = _circuits(model, inputs, data["position"], top_k)
    return data


def _task(model) -> str:
    if isinstance(model, EncoderDecoder):
        return "seq2seq"
    if isinstance(model, ClassificationHead):
        return "classify"
    if isinstance(model, EncoderMLM):
        return "mlm"
    return "lm" if isinstance(model, DecoderLM) else "encode"


def ids_key(stack: str, model) -> str:
    """The argument of the model's forward that holds the stack's token ids."""
    seq2seq_decoder = stack == "decoder" and isinstance(model, EncoderDecoder)
    return "decoder_input_ids" if seq2seq_decoder else "input_ids"


def _positions(inputs) -> dict[str, int]:
    """The last position of each stack (inputs are never padded here)."""
    return {stack: len(labels) - 1 for stack, labels in inputs.tokens.items()}


def attention_entry(model, stack: str, kind: str, weights: Tensor, allowed: Tensor) -> dict:
    """What the page draws of one (stack, kind): the weights A (L, H, T, S) rounded to 7
    decimals, the mask as (L, H) lists of T rows of '0'/'1' (1 = may attend), the layers'
    attention graphs as specs."""
    return {
        "stack": stack,
        "kind": kind,
        "keys": "encoder" if kind == "cross" else stack,
        "weights": rounded(weights, 7),
        "allowed": [
            [["".join("1" if a else "0" for a in row) for row in head] for head in layer]
            for layer in allowed.tolist()
        ],
        "graphs": [spec_text(g) for g in attention_graphs(model, stack, kind)],
    }


def _attention(rec, model) -> list[dict]:
    """One entry per (stack, kind): weights (L, H, T, S), allowed (L, H, T rows of '0'/'1')."""
    found = []
    kinds = [(s, "self") for s in rec.stacks]
    if isinstance(model, EncoderDecoder):
        kinds.append(("decoder", "cross"))
    for stack, kind in kinds:
        weights = rec.weights(kind, stack)[:, 0]  # (L, H, T, S)
        allowed = rec.masks(kind, stack)[:, 0]  # (L, H, T, S) bool
        found.append(attention_entry(model, stack, kind, weights, allowed))
    return found


def _residual(rec) -> dict[str, list[dict]]:
    """Per stack, each sub-layer's ‖update‖ (T,) and the ‖x‖ it left, in order."""
    return {
        stack: [
            {
                "layer": r.layer,
                "sublayer": r.sublayer,
                "update_norm": rounded(r.update_norm[0], sig=6),
                "after_norm": rounded(r.after_norm[0], sig=6),
            }
            for r in rec.stream(stack)
        ]
        for stack in rec.stacks
    }


def _predictions(model, out, inputs, k: int) -> dict:
    tok = model.tokenizer
    if isinstance(model, ClassificationHead):
        probs = out.logits[0].double().softmax(-1)  # (n_classes,)
        return {
            "kind": "class",
            "labels": model.class_names(),
            "probs": rounded(probs, sig=6),
            "predicted": int(probs.argmax()),
        }
    if not isinstance(model, DecoderLM | EncoderDecoder | EncoderMLM):
        return {"kind": "none"}
    probs = out.logits[0].double().softmax(-1)  # (T, N_V)
    probs = drop_undefined_ids(probs, tok, 0.0)  # padding rows are no prediction
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    rows = [
        [[tok.id_to_token(i), i, p] for i, p in zip(ids, ps, strict=True)]
        for ids, ps in zip(top.indices.tolist(), rounded(top.values, sig=6), strict=True)
    ]
    if isinstance(model, EncoderMLM):
        ids = inputs.kwargs["input_ids"][0].tolist()
        masked = [p for p, i in enumerate(ids) if i == tok.mask_id]
        return {"kind": "mask", "stack": "encoder", "top": rows, "masked": masked}
    return {"kind": "next", "stack": "decoder", "top": rows}


def _circuits(model, inputs, position: int, k: int) -> tuple[dict, dict]:
    """The logit lens at every position and each head's direct logit attribution of the
    prediction at ``position`` ({"error": why} where the readout does not allow it)."""
    output, cache = circuits.circuit_cache(model, **inputs.kwargs)
    tok = model.tokenizer
    try:
        lens = lens_data(circuits.logit_lens(cache, k=min(k, model.config.vocab_size)), tok)
    except ValueError as err:
        lens = {"error": str(err)}
    if output.logits is None:  # a body without a head (BertModel): nothing is predicted
        why = f"a {type(model).__name__} has no head: it predicts no token or class to attribute"
        return lens, {"error": why, "answer": None, "position": position}
    classify = isinstance(model, ClassificationHead)
    logits = output.logits[0] if classify else output.logits[0, position]
    answer = int((logits if classify else drop_undefined_ids(logits, tok)).argmax())
    name = model.class_names()[answer] if classify else tok.id_to_token(answer)
    mask = inputs.kwargs.get("attention_mask")
    try:
        dla = circuits.logit_attribution(
            cache, answer, position=position, **({} if mask is None else {"attention_mask": mask})
        )
    except ValueError as err:
        return lens, {"error": str(err), "answer": name, "position": position}
    kinds = ["self", "cross"] if isinstance(model, EncoderDecoder) else ["self"]
    return lens, {
        "answer": name,
        "position": None if classify else position,
        "logit": float(dla.logit[0]),
        "heads": {kind: rounded(dla.heads(kind)[..., 0], sig=6) for kind in kinds},
    }


def lens_data(lens, tok, batch: int = 0) -> dict:
    """A LogitLens of every position (``position=None``, ``return_type="top_k"``) as the page
    reads it: each layer's label, and its top-k tokens and probabilities (4 digits) at each
    position of example ``batch`` (a token by its id without a tokenizer ``tok``)."""
    name = str if tok is None else tok.id_to_token
    return {
        "labels": lens.labels,
        "tokens": [
            [[name(i) for i in at] for at in layer] for layer in lens.ids[:, batch].tolist()
        ],
        "probs": rounded(lens.probs[:, batch], sig=4),
    }


def rounded(t: Tensor, decimals: int | None = None, *, sig: int | None = None) -> list:
    """``t`` as nested lists of floats, rounded to ``decimals`` places or ``sig`` significant
    digits (finite values only: a NaN or infinity is an error, never silently drawn)."""
    t = t.detach().double().cpu()
    if not torch.isfinite(t).all():
        raise ValueError("the model computed a non-finite value (NaN or infinity)")
    if decimals is None:  # the last kept digit of each value is 10^exponent
        exponent = t.abs().clamp_min(1e-300).log10().floor() - (sig - 1)
        step = torch.pow(10.0, exponent)
    else:
        step = torch.full_like(t, 10.0**-decimals)
    return (t / step).round().mul(step).tolist()
