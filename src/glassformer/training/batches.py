"""Deterministic batches: batch k of a run depends only on (seed, k).

Epoch e = k // batches_per_epoch shuffles the examples with a generator seeded from
(seed, e); masked-LM masks for batch k come from a generator seeded from (seed, k). So a run
resumed at step s draws exactly the batches an uninterrupted run would, with nothing to save
but the step.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils.data import Dataset

from ..data import TextDataset, encode_dataset, make_collate

__all__ = ["BatchStream"]


def _seed(*parts: int) -> int:
    g = torch.Generator().manual_seed(parts[0])
    for p in parts[1:]:
        g = torch.Generator().manual_seed(int(torch.randint(2**62, (1,), generator=g)) ^ p)
    return int(torch.randint(2**62, (1,), generator=g))


class BatchStream:
    """``batch(k)`` -> dict of tensors; ``len()`` = batches per epoch (the last one smaller
    unless ``drop_last``)."""

    def __init__(
        self,
        dataset: Dataset,
        collate: Callable[[list], dict[str, torch.Tensor]],
        batch_size: int,
        seed: int,
        *,
        shuffle: bool = True,
        drop_last: bool = True,
    ) -> None:
        n = len(dataset)
        if n == 0:
            raise ValueError("the dataset has no examples")
        self.dataset, self.collate, self.seed, self.shuffle = dataset, collate, seed, shuffle
        self.batch_size = min(batch_size, n)
        # drop_last: full batches only, so every training step is alike
        self.per_epoch = n // self.batch_size if drop_last else -(-n // self.batch_size)
        self._epoch, self._order = -1, None

    @classmethod
    def for_task(
        cls,
        data: TextDataset,
        tokenizer,
        task: str,
        *,
        max_len: int,
        batch_size: int,
        seed: int,
        shuffle: bool,
        drop_last: bool,
        mlm_probability: float = 0.15,
        decoder_start_id: int | None = None,
        progress: str = "none",
    ) -> BatchStream:
        """The batches of ``task`` (glassformer/tasks.py) on ``data``: its examples encoded
        for the task (windows of ``max_len`` tokens for lm and mlm) and collated; the masks of
        a masked LM come from a generator that ``batch(k)`` seeds for batch k; seq2seq's
        decoder inputs start with ``decoder_start_id`` (default the tokenizer's <BOS>);
        ``progress`` shows the encoding of a text file into the token cache (encode_dataset)."""
        encoded = encode_dataset(data, tokenizer, task, max_len=max_len, progress=progress)
        generator = torch.Generator()  # drawn from by the masked LM's collate only
        collate = make_collate(
            task, tokenizer, generator=generator, mlm_probability=mlm_probability,
            decoder_start_id=decoder_start_id,
        )  # fmt: skip
        return cls(encoded, collate, batch_size, seed, shuffle=shuffle, drop_last=drop_last)

    def __len__(self) -> int:
        return self.per_epoch

    def batch(self, k: int, rank: int = 0, world_size: int = 1) -> dict[str, torch.Tensor]:
        """Batch k, or process ``rank``'s share of it (every world_size-th example)."""
        epoch, i = divmod(k, self.per_epoch)
        if epoch != self._epoch:
            n = len(self.dataset)
            g = torch.Generator().manual_seed(_seed(self.seed, epoch))
            self._order = torch.randperm(n, generator=g) if self.shuffle else torch.arange(n)
            self._epoch = epoch
        idx = self._order[i * self.batch_size : (i + 1) * self.batch_size]
        idx = idx[rank::world_size].tolist()
        generator = getattr(self.collate, "generator", None)
        if generator is not None:  # masked LM: the masks of batch k
            generator.manual_seed(_seed(self.seed, 1_000_003, k))
        return self.collate([self.dataset[j] for j in idx])
