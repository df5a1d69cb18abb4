"""Collate functions: pad a list of items to the longest in the batch. "Formal Algorithms for
Transformers", "Tokenization", pads a text shorter than ℓ_max with <PAD> up to ℓ_max; the longest
in the batch gives the same outputs at the real positions (the padding mask hides every <PAD>
and the loss skips them) without the cost of the columns beyond it.

Conventions (Hugging Face's, which the models follow):

* ``input_ids`` (B, T) long, padded with ``pad_id`` on the right;
* ``attention_mask`` (B, T) long, 1 = real token, 0 = padding;
* ``labels``: ``IGNORE_INDEX`` (-100) wherever nothing is to be scored (padding, and in MLM the
  tokens that were not selected).

Per task:

* ``"lm"`` (causal): ``labels`` (B, T) = ``input_ids`` with -100 at padding; aligned with
  ``input_ids`` — the model shifts them (position t predicts ``labels[:, t + 1]``).
* ``"seq2seq"``: ``input_ids``/``attention_mask`` are the source (ids + <EOS>); ``labels`` (B, T')
  are the target ids + <EOS>, -100 at padding; ``decoder_input_ids`` = <BOS> + target ids
  (``shift_right(labels)``, models/encoder_decoder.py), <PAD> wherever the target is padding
  (as in ``input_ids``); ``decoder_attention_mask`` = 1 where labels are real.
* ``"classification"``: ``labels`` (B,) class indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..models.encoder_decoder import shift_right
from ..models.outputs import IGNORE_INDEX
from ..tasks import check_data_kind


def pad_sequences(seqs: Sequence[torch.Tensor], pad_value: int) -> torch.Tensor:
    """Stack 1-D tensors into (B, T), T = the longest, right-padded with ``pad_value``."""
    if not seqs:
        raise ValueError("seqs is empty: allowed a non-empty list of 1-D tensors")
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), pad_value, dtype=torch.long)  # (B, T)
    for b, s in enumerate(seqs):
        out[b, : len(s)] = s
    return out


def lengths_mask(seqs: Sequence[torch.Tensor], T: int) -> torch.Tensor:
    """(B, T) long: 1 for the first ``len(seqs[b])`` positions of row b, 0 after."""
    lengths = torch.tensor([len(s) for s in seqs])
    return (torch.arange(T)[None, :] < lengths[:, None]).long()  # (B, T)


def collate_lm(items: Sequence[dict[str, torch.Tensor]], *, pad_id: int) -> dict[str, torch.Tensor]:
    """Causal LM batch: input_ids, attention_mask, labels (= input_ids, -100 at padding)."""
    ids = [it["input_ids"] for it in items]
    input_ids = pad_sequences(ids, pad_id)  # (B, T)
    attention_mask = lengths_mask(ids, input_ids.shape[1])  # (B, T)
    labels = input_ids.masked_fill(attention_mask == 0, IGNORE_INDEX)  # (B, T)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def collate_seq2seq(
    items: Sequence[dict[str, torch.Tensor]], *, pad_id: int, bos_id: int
) -> dict[str, torch.Tensor]:
    """Seq2seq batch: source input_ids/attention_mask; labels, decoder_input_ids,
    decoder_attention_mask of the target (see the module docstring)."""
    src = [it["input_ids"] for it in items]
    tgt = [it["labels"] for it in items]
    input_ids = pad_sequences(src, pad_id)  # (B, S)
    labels = pad_sequences(tgt, IGNORE_INDEX)  # (B, T)
    target_mask = lengths_mask(tgt, labels.shape[1])  # (B, T)
    # <PAD> where the target is padding, also just after its <EOS> (which shift_right moves in)
    decoder_input_ids = shift_right(labels, bos_id, pad_id).masked_fill(target_mask == 0, pad_id)
    return {
        "input_ids": input_ids,
        "attention_mask": lengths_mask(src, input_ids.shape[1]),  # (B, S)
        "labels": labels,
        "decoder_input_ids": decoder_input_ids,  # (B, T)
        "decoder_attention_mask": target_mask,  # (B, T)
    }


def collate_classification(
    items: Sequence[dict[str, torch.Tensor]], *, pad_id: int
) -> dict[str, torch.Tensor]:
    """Classification batch: input_ids, attention_mask, labels (B,) class indices."""
    ids = [it["input_ids"] for it in items]
    input_ids = pad_sequences(ids, pad_id)  # (B, T)
    return {
        "input_ids": input_ids,
        "attention_mask": lengths_mask(ids, input_ids.shape[1]),  # (B, T)
        "labels": torch.stack([it["labels"] for it in items]).long(),  # (B,)
    }


@dataclass(frozen=True)
class Collator:
    """``collate_fn`` for a DataLoader: pads a list of items of the kind ``task`` ("lm",
    "seq2seq", "classification"; picklable, so it also works with ``num_workers > 0``)."""

    task: str
    pad_id: int
    bos_id: int

    def __post_init__(self) -> None:
        check_data_kind(self.task)

    def __call__(self, items: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        if self.task == "lm":
            return collate_lm(items, pad_id=self.pad_id)
        if self.task == "seq2seq":
            return collate_seq2seq(items, pad_id=self.pad_id, bos_id=self.bos_id)
        return collate_classification(items, pad_id=self.pad_id)
