"""The inputs of ``glassformer inspect``, ``trace`` and ``explore``: the text (and the target)
encoded as the model was trained on them, padded to ``pad_to``, the corrupted input and the
position that the circuits analyse. Errors open with the argument they are about (``text``,
``target``, ``pad_to``, ``corrupt``; glassformer/named.py)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..models import DecoderClassifier, DecoderLM, EncoderDecoder, EncoderModel
from ..named import naming

__all__ = ["Inputs", "analysed_position", "corrupt_ids", "encode_inputs"]

MAX_TARGET = 32  # tokens generated for an encoder-decoder when no target is given


@dataclass
class Inputs:
    kwargs: dict[str, Tensor]  # the model's forward arguments
    tokens: dict[str, list[str]]  # the labels of each stack's positions


def encode_inputs(
    model,
    text: str,
    target: str | None,
    pad_to: int | None,
    target_ids: bool = True,
    what: tuple[str, str] = ("text", "target"),
) -> Inputs:
    """Encode the text as in training: <BOS> ids for a DecoderLM, <BOS> ids <EOS> for an
    encoder or a DecoderClassifier, ids <EOS> for an encoder-decoder's source (+ decoder_start
    and the target, unless ``target_ids`` is False). ``what`` names the text and the target
    in error messages."""
    tok, cfg = model.tokenizer, model.config
    device = next(model.parameters()).device
    if target is not None and not isinstance(model, EncoderDecoder):
        message = f"{what[1]} is for encoder-decoder checkpoints only"
        raise naming(ValueError(message), argument=what[1])
    if isinstance(model, DecoderLM):
        ids = tok.encode(text, add_bos=True)
    elif isinstance(model, EncoderModel):
        ids = tok.encode(text, add_bos=True, add_eos=True, allowed_special=True)
    elif isinstance(model, DecoderClassifier):
        ids = tok.encode(text, add_bos=True, add_eos=True)
    else:
        ids = tok.encode(text, add_eos=True)
    ids, mask = _padded(what[0], ids, pad_to, cfg.max_len, cfg.pad_id)
    kwargs = {"input_ids": torch.tensor([ids], device=device)}
    if mask is not None:
        kwargs["attention_mask"] = torch.tensor([mask], device=device)
    names = [tok.id_to_token(i) for i in ids]
    if not isinstance(model, EncoderDecoder) or not target_ids:
        return Inputs(kwargs, {_stack(model): names})
    tgt = _target(model, kwargs, target, what[1])
    kwargs["decoder_input_ids"] = torch.tensor([tgt], device=device)
    return Inputs(kwargs, {"encoder": names, "decoder": [tok.id_to_token(i) for i in tgt]})


def _target(model: EncoderDecoder, kwargs: dict[str, Tensor], target: str | None, name: str):
    """decoder_start_id + the target's ids (teacher forcing), or + the greedy output."""
    cfg, tok = model.config, model.tokenizer
    if target is not None:
        ids = [cfg.decoder_start_id, *tok.encode(target)]
    else:
        from ..generation import generate

        n = min(MAX_TARGET, cfg.max_len - 1)
        mask = kwargs.get("attention_mask")
        out = generate(
            model, kwargs["input_ids"], attention_mask=mask, max_new_tokens=n, temperature=0.0
        )
        new = out.tokens[0]
        ids = [cfg.decoder_start_id, *(new[:-1] if new and new[-1] == tok.eos_id else new)]
    if len(ids) > cfg.max_len:
        message = (
            f"{name} has {len(ids)} tokens with the start token; the model's max_len is "
            f"{cfg.max_len}: allowed at most {cfg.max_len - 1}"
        )
        raise naming(ValueError(message), argument=name)
    return ids


def analysed_position(model, inputs: Inputs, positions: dict[str, int], chosen) -> int:
    """The position whose prediction the circuits analyse: the ``chosen`` one, else a masked
    LM's first <MASK>, else the last real token (the readout stack's entry of ``positions``)."""
    stack = "encoder" if isinstance(model, EncoderModel) else "decoder"
    mask_id = getattr(model.tokenizer, "mask_id", None)
    ids = inputs.kwargs["input_ids"][0].tolist()
    if chosen is None and isinstance(model, EncoderModel) and mask_id in ids:
        return ids.index(mask_id)
    return positions[stack]


def corrupt_ids(
    model,
    text: str,
    inputs: Inputs,
    pad_to: int | None,
    what: tuple[str, str] = ("corrupt", "text"),
) -> Tensor:
    """The corrupted ``text`` encoded as the clean text of ``inputs`` was, with the same
    length (``pad_to`` as for it). ``what`` names the corrupted and the clean text in error
    messages (the command line: its options)."""
    corrupt = encode_inputs(model, text, None, pad_to, target_ids=False, what=(what[0], ""))
    ids, clean = corrupt.kwargs["input_ids"], inputs.kwargs["input_ids"]
    if ids.shape != clean.shape:
        message = (
            f"{what[0]} has {ids.shape[1]} tokens and {what[1]} {clean.shape[1]}: patching "
            "needs inputs of the same length"
        )
        raise naming(ValueError(message), argument=what[0])
    return ids


def _padded(arg: str, ids: list[int], pad_to, max_len: int, pad_id: int):
    if len(ids) > max_len:
        message = f"{arg} has {len(ids)} tokens; the model's max_len is {max_len}: shorten the text"
        raise naming(ValueError(message), argument=arg)
    if pad_to is None:
        return ids, None
    if not len(ids) <= pad_to <= max_len:
        message = (
            f"pad_to {pad_to} is not allowed: between the input's {len(ids)} tokens and the "
            f"model's max_len {max_len}"
        )
        raise naming(ValueError(message), argument="pad_to")
    extra = pad_to - len(ids)
    return ids + [pad_id] * extra, [1] * len(ids) + [0] * extra


def _stack(model) -> str:
    """The name of a one-stack model's stack: "decoder" (causal) or "encoder"."""
    return "decoder" if isinstance(model, DecoderLM | DecoderClassifier) else "encoder"
