"""From raw examples to batches in one call: ``make_loader`` ("Formal Algorithms for
Transformers": tokens wrapped in <BOS>/<EOS>, chunked to l_max, padded with <PAD>; the task
decides the batch).

``make_loader(dataset, tokenizer, task, ...)`` = ``encode_dataset`` (text -> token dataset,
encoding.py) + ``make_collate`` (padding, and for "mlm" masking) + ``torch.utils.data.DataLoader``.
Loader tasks: ``"lm"`` (causal LM), ``"mlm"`` (masked LM; both on an "lm" dataset),
``"seq2seq"`` and ``"classification"``.

Determinism: all randomness comes from generators built from ``seed`` — the shuffling
order from ``torch.Generator().manual_seed(seed)``, the MLM masks from a second generator
whose seed is drawn from the first before it is used. The global RNG is never used. A new
loader with the same arguments gives the same batches; each pass over a loader continues the
generators, so successive epochs differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader, Dataset

from .collate import Collator
from .encoding import ClassificationDataset, LMDataset, Seq2SeqDataset
from .examples import TextDataset
from .masking import MLMCollator

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer

LOADER_TASKS: tuple[str, ...] = ("lm", "mlm", "seq2seq", "classification")
_DATA_TASK = {"lm": "lm", "mlm": "lm", "seq2seq": "seq2seq", "classification": "classification"}


def resolve_task(dataset: TextDataset, task: str | None) -> str:
    """``task`` checked against the dataset's task; None -> the dataset's own task."""
    if task is None:
        return dataset.task
    if task not in LOADER_TASKS:
        raise ValueError(f"task is {task!r}: allowed {', '.join(map(repr, LOADER_TASKS))}")
    if _DATA_TASK[task] != dataset.task:
        allowed = [t for t, d in _DATA_TASK.items() if d == dataset.task]
        raise ValueError(
            f"task is {task!r}, but dataset {dataset.name!r} holds {dataset.task!r} examples: "
            f"allowed {', '.join(map(repr, allowed))}"
        )
    return task


def encode_dataset(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    task: str | None = None,
    *,
    max_len: int = 128,
    overflow: str | None = None,
) -> Dataset:
    """The token dataset of ``dataset`` for ``task`` (see encoding.py): LMDataset (packed
    windows, <BOS> per document) for "lm"/"mlm", Seq2SeqDataset, ClassificationDataset.
    ``overflow`` None: the dataset's own (``dataset.overflow``, "error" unless it was loaded
    with another); messages name an example by ``dataset.where(i)`` (file and line)."""
    task = resolve_task(dataset, task)
    overflow = dataset.overflow if overflow is None else overflow
    if task in ("lm", "mlm"):
        return LMDataset(dataset.examples, tokenizer, max_len)
    if task == "seq2seq":
        return Seq2SeqDataset(
            dataset.examples, tokenizer, max_len, overflow=overflow, where=dataset.where
        )
    return ClassificationDataset(
        dataset.examples,
        dataset.labels,
        tokenizer,
        max_len,
        overflow=overflow,
        where=dataset.where,
    )


def make_collate(
    task: str,
    tokenizer: Tokenizer,
    *,
    generator: torch.Generator | None = None,
    mlm_probability: float = 0.15,
) -> Callable[[list], dict[str, torch.Tensor]]:
    """The ``collate_fn`` for ``task``; "mlm" needs the ``generator`` that draws the masks."""
    if task == "mlm":
        if generator is None:
            raise ValueError("generator is None: allowed a torch.Generator for task 'mlm'")
        return MLMCollator.for_tokenizer(tokenizer, generator, mlm_probability)
    if task not in LOADER_TASKS:
        raise ValueError(f"task is {task!r}: allowed {', '.join(map(repr, LOADER_TASKS))}")
    return Collator(task, tokenizer.pad_id, tokenizer.bos_id)


def make_loader(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    task: str | None = None,
    *,
    batch_size: int = 32,
    max_len: int = 128,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    mlm_probability: float = 0.15,
    overflow: str | None = None,
) -> DataLoader:
    """A DataLoader of padded batches (dicts of tensors, see collate.py) for ``task``.

    Args:
        dataset: raw examples, e.g. ``load_dataset("reverse")``.
        tokenizer: a trained tokenizer, e.g. ``CharTokenizer().train(dataset.texts())``.
        task: "lm" | "mlm" | "seq2seq" | "classification"; None -> ``dataset.task``.
        batch_size: examples (LM: windows) per batch.
        max_len: the longest sequence (l_max): LM windows, sources, targets and texts.
        shuffle: draw the order from the seeded generator (else dataset order).
        seed: the seed of every random choice (order, MLM masks).
        drop_last: drop a last, smaller batch.
        mlm_probability: for "mlm", the probability that a token is selected.
        overflow: seq2seq / classification examples longer than ``max_len``: "error",
            "truncate" or "drop"; None: the dataset's own ``overflow`` ("error" unless
            ``load_dataset(..., overflow=...)`` chose another).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size is {batch_size!r}: allowed a positive int")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed is {seed!r}: allowed an int")
    task = resolve_task(dataset, task)
    encoded = encode_dataset(dataset, tokenizer, task, max_len=max_len, overflow=overflow)
    order = torch.Generator().manual_seed(seed)
    mask_seed = int(torch.randint(2**62, (1,), generator=order))
    collate = make_collate(
        task,
        tokenizer,
        generator=torch.Generator().manual_seed(mask_seed),
        mlm_probability=mlm_probability,
    )
    return DataLoader(
        encoded,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        collate_fn=collate,
        generator=order,
    )
