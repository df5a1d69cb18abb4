"""Masked-language-model corruption for encoder pretraining (the BERT recipe; "Formal Algorithms
for Transformers", "Encoder-only ... (BERT)", with the <MASK> token of "Tokenization").

Eligible positions are those holding an ordinary token: never a special token (<PAD>,
<BOS>, <EOS>, <UNK>, <MASK>, or any other id in ``special_ids``). Each eligible position is
selected independently with probability ``probability`` (0.15), so 15% of eligible tokens
are selected in expectation. Of the selected positions, independently, 80% become <MASK>,
10% a token drawn uniformly from the ordinary (non-special) ids — which may happen to be the
original token — and 10% are left unchanged. ``labels`` hold the original id at selected
positions and -100 everywhere else.

Zero selected tokens: a row that has at least one eligible token but gets none selected by
the coin flips has one eligible position selected uniformly at random instead, so every
such row contributes at least one label (this raises the expected count for a row of n
eligible tokens from 0.15 n to 0.15 n + 0.85^n). A row with no eligible token (e.g. only
<BOS> <EOS> and padding) has no labels; if a whole batch has none, all labels are -100 and
a mean cross-entropy over them is undefined, so training code should skip that batch.

Randomness comes only from the ``torch.Generator`` passed in: the same generator state and
the same ``input_ids`` give the same result. Random numbers are drawn for every position,
so the stream consumed depends only on the shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from ..models.outputs import IGNORE_INDEX
from .collate import collate_lm


def mask_tokens(
    input_ids: torch.Tensor,
    *,
    mask_id: int,
    special_ids: Iterable[int],
    vocab_size: int,
    generator: torch.Generator,
    probability: float = 0.15,
    mask_fraction: float = 0.8,
    random_fraction: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(corrupted input_ids, labels)``, both (B, T) long; ``input_ids`` is not changed."""
    _check_fractions(probability, mask_fraction, random_fraction)
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids has shape {tuple(input_ids.shape)}: allowed (B, T)")
    special_set = set(special_ids)
    special = torch.tensor(sorted(special_set), dtype=torch.long)
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in special_set])
    if len(ordinary) == 0:
        raise ValueError(f"vocab_size is {vocab_size}: allowed a vocabulary with ordinary tokens")
    shape = input_ids.shape
    eligible = ~torch.isin(input_ids, special)  # (B, T)
    selected = (torch.rand(shape, generator=generator) < probability) & eligible  # (B, T)

    # A row with eligible tokens but none selected gets one, chosen uniformly among them.
    scores = torch.rand(shape, generator=generator).masked_fill(~eligible, -1.0)  # (B, T)
    fallback = scores.argmax(dim=1)  # (B,)
    empty = eligible.any(dim=1) & ~selected.any(dim=1)  # (B,)
    selected[empty, fallback[empty]] = True

    u = torch.rand(shape, generator=generator)  # (B, T) which of the three fates
    to_mask = selected & (u < mask_fraction)
    to_random = selected & (u >= mask_fraction) & (u < mask_fraction + random_fraction)
    random_ids = ordinary[torch.randint(len(ordinary), shape, generator=generator)]  # (B, T)

    corrupted = input_ids.masked_fill(to_mask, mask_id)
    corrupted = torch.where(to_random, random_ids, corrupted)
    labels = input_ids.masked_fill(~selected, IGNORE_INDEX)
    return corrupted, labels


@dataclass
class MLMCollator:
    """``collate_fn`` for masked LM: pads like ``collate_lm``, then applies ``mask_tokens``.

    Returns input_ids (corrupted), attention_mask, labels (original ids at the selected
    positions, -100 elsewhere). The generator advances with every batch, so a DataLoader
    over the same data with a generator seeded alike gives the same batches. With
    ``num_workers > 0`` each worker holds its own copy of the generator: use workers = 0 when
    the masks must not repeat across workers.
    """

    pad_id: int
    mask_id: int
    special_ids: Sequence[int]
    vocab_size: int
    generator: torch.Generator = field(default_factory=lambda: torch.Generator().manual_seed(0))
    probability: float = 0.15

    def __post_init__(self) -> None:
        _check_fractions(self.probability, 0.8, 0.1)

    @classmethod
    def for_tokenizer(
        cls, tokenizer, generator: torch.Generator, probability: float = 0.15
    ) -> MLMCollator:
        """The collator for ``tokenizer``'s <PAD>, <MASK>, special ids and vocabulary size."""
        return cls(
            pad_id=tokenizer.pad_id,
            mask_id=tokenizer.mask_id,
            special_ids=tuple(sorted(tokenizer.special_ids)),
            vocab_size=tokenizer.vocab_size,
            generator=generator,
            probability=probability,
        )

    def __call__(self, items: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        batch = collate_lm(items, pad_id=self.pad_id)
        ids, labels = mask_tokens(
            batch["input_ids"],
            mask_id=self.mask_id,
            special_ids=(*self.special_ids, self.pad_id),
            vocab_size=self.vocab_size,
            generator=self.generator,
            probability=self.probability,
        )
        return {"input_ids": ids, "attention_mask": batch["attention_mask"], "labels": labels}


def _check_fractions(probability: float, mask_fraction: float, random_fraction: float) -> None:
    if not 0.0 < probability <= 1.0:
        raise ValueError(f"probability is {probability!r}: allowed 0 < probability <= 1")
    for name, v in (("mask_fraction", mask_fraction), ("random_fraction", random_fraction)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} is {v!r}: allowed a fraction in [0, 1]")
    if mask_fraction + random_fraction > 1.0:
        raise ValueError(
            f"mask_fraction + random_fraction is {mask_fraction + random_fraction!r}: "
            f"allowed at most 1 (the rest stay unchanged)"
        )
