"""From raw examples to batches in one call: ``make_loader`` ("Formal Algorithms for
Transformers": tokens wrapped in <BOS>/<EOS>, chunked to l_max, padded with <PAD>; the task
decides the batch).

``make_loader(dataset, tokenizer, task, ...)`` = ``encode_dataset`` (text -> token dataset,
encoding.py) + ``make_collate`` (padding, and for "mlm" masking) + ``torch.utils.data.DataLoader``.
Tasks (glassformer/tasks.py): ``"lm"`` (causal LM), ``"mlm"`` (masked LM; both on an "lm"
dataset), ``"seq2seq"`` and ``"classification"`` (or ``"classify"``, as training calls it).

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

from ..tasks import TASKS, Task, get_task, task_for_data
from .collate import Collator
from .encoding import ClassificationDataset, LMDataset, PackedWindows, Seq2SeqDataset
from .examples import TextDataset
from .masking import MLMCollator
from .record_cache import uses_record_cache
from .record_dataset import record_dataset
from .token_cache import token_file

if TYPE_CHECKING:
    from glassformer.tokenizers.base import Tokenizer


def resolve_task(dataset: TextDataset, task: str | None) -> Task:
    """``task`` checked against the dataset's kind of examples; None -> the dataset's own."""
    if task is None:
        return task_for_data(dataset.task)
    found = get_task(task)
    if found.data != dataset.task:
        allowed = [
            n for t in TASKS.values() if t.data == dataset.task for n in (t.name, *t.aliases)
        ]
        raise ValueError(
            f"task is {task!r}, but dataset {dataset.name!r} holds {dataset.task!r} examples: "
            f"allowed {', '.join(map(repr, allowed))}"
        )
    return found


def encode_dataset(
    dataset: TextDataset,
    tokenizer: Tokenizer,
    task: str | None = None,
    *,
    max_len: int = 128,
    overflow: str | None = None,
    progress: str = "none",
) -> Dataset:
    """The token dataset of ``dataset`` for ``task`` (see encoding.py): LMDataset (packed
    windows, <BOS> per document) for "lm"/"mlm", Seq2SeqDataset, ClassificationDataset.
    The one document of a text file (``dataset.part``) is encoded once into the token cache
    and read from its memory map (PackedWindows: the same windows; token_cache.py); so are
    seq2seq and classification records of at least ``record_cache.CACHE_CHARS`` characters
    (RecordDataset: the same items; record_cache.py). Encoding into the cache is shown as
    ``progress`` says ("bar", "lines", "none"), on at most ``dataset.workers`` processes.
    ``overflow`` None: the dataset's own (``dataset.overflow``, "error" unless it was loaded
    with another); messages name an example by ``dataset.where(i)`` (file and line)."""
    kind = resolve_task(dataset, task).data
    overflow = dataset.overflow if overflow is None else overflow
    if kind == "lm" and dataset.part is not None:
        tokens = token_file(dataset.part, tokenizer, progress=progress, workers=dataset.workers)
        return PackedWindows(tokens, max_len)
    if kind == "lm":
        return LMDataset(dataset.examples, tokenizer, max_len)
    if uses_record_cache(dataset):
        return record_dataset(
            dataset, tokenizer, max_len, overflow=overflow, progress=progress,
            workers=dataset.workers,
        )  # fmt: skip
    if kind == "seq2seq":
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
    decoder_start_id: int | None = None,
) -> Callable[[list], dict[str, torch.Tensor]]:
    """The ``collate_fn`` for ``task``; "mlm" needs the ``generator`` that draws the masks
    (the other tasks draw nothing and leave it unused). ``decoder_start_id``: seq2seq's first
    decoder input, the model's (BART's </s>); default the tokenizer's <BOS>."""
    found = get_task(task)
    if found.name == "mlm":
        if generator is None:
            raise ValueError("generator is None: allowed a torch.Generator for task 'mlm'")
        return MLMCollator.for_tokenizer(tokenizer, generator, mlm_probability)
    start = tokenizer.bos_id if decoder_start_id is None else decoder_start_id
    return Collator(found.data, tokenizer.pad_id, start)


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
        task: "lm" | "mlm" | "seq2seq" | "classification" (or "classify"); None -> the
            dataset's own (``dataset.task``).
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
    task = resolve_task(dataset, task).name
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
