"""Raw examples of the three tasks of the notes ("Formal Algorithms for Transformers",
"Transformers Tasks").

* ``"lm"`` — sequence modelling: each example is a text ``str`` (a document) drawn i.i.d.
  from a distribution P over V*; the goal is P(x[t] | x[1:t-1]).
* ``"seq2seq"`` — sequence-to-sequence prediction: each example is a pair
  ``(source, target)`` of texts; the goal is P(z | x).
* ``"classification"`` — sequence classification: each example is a pair ``(label, text)``
  with ``label`` one of ``TextDataset.labels``; the goal is P(c | x).

A :class:`TextDataset` holds the examples of one split, before tokenization. It is a
read-only sequence (``len``, indexing, iteration), so it also works as a
``torch.utils.data.Dataset`` of raw examples. A dataset read from a file keeps the line of
each example, so that every message about an example names the file and the line
(``where(i)``).

The examples of a split read from a file are not held: ``examples`` (and, for their lines,
``lines``) is then an ``OnDisk`` sequence (on_disk.py; record_stream.RecordsOnDisk for seq2seq
and classification records) that reads the file only when asked, and ``texts()`` streams the
texts; the built-in corpora and tasks hold their examples.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..tasks import check_data_kind
from .documents import Documents
from .on_disk import OnDisk

SPLITS: tuple[str, ...] = ("train", "validation")
# What encoding does with a seq2seq / classification example longer than max_len (encoding.py).
OVERFLOW: tuple[str, ...] = ("error", "truncate", "drop")

Example = str | tuple[str, str]


@dataclass(frozen=True)
class TextDataset(Sequence):
    """The raw examples of one split of one dataset.

    Attributes:
        name: the dataset's name (built-in) or the path it was read from.
        task: ``"lm"`` | ``"seq2seq"`` | ``"classification"``.
        split: ``"train"`` | ``"validation"`` (for a user file, the label it was loaded under).
        examples: ``str`` (lm), ``(source, target)`` (seq2seq) or ``(label, text)``
            (classification); for an lm split of a text file, an ``OnDisk`` sequence of its
            documents, read when asked (the module docstring).
        labels: classification only: the class names, in the order that defines the class
            indices (``labels.index(label)``); ``()`` for the other tasks.
        description: one line saying what the data is.
        lines: for data read from a file, the line on which each example starts (1-based),
            or its row in a Parquet file or a datasets folder (``unit``); ``()`` otherwise (an
            ``OnDisk`` sequence for the lines of a text file read with ``one_per_line``).
        overflow: what encoding does with a seq2seq / classification example longer than
            ``max_len``: "error" (the default), "truncate" or "drop" (see encoding.py); an
            "lm" text is cut into windows instead, so it stays "error" there.
        part: for an lm split read from disk, its documents there (documents.py: e.g. the
            part of a text file the split holds): their tokens are then encoded once into the
            token cache and read from there (token_cache.py); None otherwise. ``examples``
            is then an ``OnDisk`` sequence of the documents' texts (on_disk.py: read from disk
            when asked), kept as it is, not copied or checked.
        unit: what ``lines`` count: ``"line"`` (of a text or JSON Lines file), ``"row"`` (of a
            Parquet file or a datasets folder) or ``"file"`` (of a folder).
        cache: the folder of the token cache for this split's records (record_cache.py); None:
            the default (``token_cache.cache_folder``).
        workers: the most processes that encode the split into the token cache (token_cache.py,
            record_cache.py): how it is encoded, not what it holds; None: the default
            (``$GLASSFORMER_WORKERS``, else every CPU the process may use).
        tokenizer_sample: the most characters of the split a BPE tokenizer trained on it
            learns its merges from, spread evenly through it (tokenizer_cache.py): how a
            tokenizer is trained, not what the split holds; None: the default
            (``tokenizer_cache.SAMPLE_CHARS``, a hundred million); 0: every character.
    """

    name: str
    task: str
    split: str
    examples: tuple[Example, ...] | OnDisk
    labels: tuple[str, ...] = ()
    description: str = ""
    lines: tuple[int, ...] | OnDisk = ()
    overflow: str = "error"
    part: Documents | None = field(default=None, compare=False)
    unit: str = field(default="line", compare=False)
    cache: str | None = field(default=None, compare=False)
    workers: int | None = field(default=None, compare=False)
    tokenizer_sample: int | None = field(default=None, compare=False)
    _label_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_data_kind(self.task)
        check_workers(self.workers)
        check_tokenizer_sample(self.tokenizer_sample)
        on_disk = isinstance(self.examples, OnDisk)
        if on_disk and self.task not in self.examples.tasks:  # type: ignore[union-attr]
            allowed = " or ".join(map(repr, self.examples.tasks))  # type: ignore[union-attr]
            raise ValueError(f"these examples on disk are for task {allowed}, not {self.task!r}")
        if not on_disk:
            object.__setattr__(self, "examples", tuple(self.examples))
        object.__setattr__(self, "labels", tuple(self.labels))
        if not isinstance(self.lines, OnDisk):
            object.__setattr__(self, "lines", tuple(self.lines))
        if self.lines and len(self.lines) != len(self.examples):
            raise ValueError(
                f"lines has {len(self.lines)} entries: allowed one per example "
                f"({len(self.examples)}), or none"
            )
        if self.overflow not in OVERFLOW:
            raise ValueError(
                f"overflow is {self.overflow!r}: allowed {', '.join(map(repr, OVERFLOW))}"
            )
        if self.task == "lm" and self.overflow != "error":
            raise ValueError(
                f"overflow is {self.overflow!r}: allowed only for seq2seq and classification "
                "data (an lm text is cut into windows of max_len, never truncated)"
            )
        for i, ex in enumerate(() if on_disk else self.examples):
            _check_example(self.task, ex, i)
        if self.task == "classification":
            if not self.labels or len(set(self.labels)) != len(self.labels):
                raise ValueError(  # one class is a split to evaluate on; training needs two
                    f"labels is {self.labels!r}: allowed at least 1 class name, all distinct"
                )
            examples = () if on_disk else self.examples  # on disk: labels from their scan
            unknown = {lab for lab, _ in examples} - set(self.labels)  # type: ignore[misc]
            if unknown:
                raise ValueError(
                    f"examples use labels {sorted(unknown)} that are not in labels "
                    f"{self.labels!r}: allowed only the listed labels"
                )
        elif self.labels:
            raise ValueError(f"labels is {self.labels!r}: allowed only for task 'classification'")
        object.__setattr__(self, "_label_index", {lab: i for i, lab in enumerate(self.labels)})

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i):  # type: ignore[override]
        return self.examples[i]

    def __iter__(self) -> Iterator[Example]:
        return iter(self.examples)

    def where(self, i: int) -> str:
        """Where example ``i`` comes from, for messages: ``file 'sms.tsv', line 245`` (``row
        245`` of a Parquet file) for data read from a file, else ``dataset 'reverse',
        examples[243]``."""
        if self.lines:
            return f"file {self.name!r}, {self.unit} {self.lines[i]}"
        return f"dataset {self.name!r}, examples[{i}]"

    def label_id(self, label: str) -> int:
        """The class index of ``label`` (its position in ``labels``)."""
        try:
            return self._label_index[label]
        except KeyError:
            raise ValueError(f"label is {label!r}: allowed {', '.join(self.labels)}") from None

    def texts(self) -> Iterator[str]:
        """Every text in the split (both sides of a pair; not the labels): for training a
        tokenizer, e.g. ``CharTokenizer().train(ds.texts())``; the text of a file is read as
        it goes, in pieces (on_disk.py)."""
        if isinstance(self.examples, OnDisk):
            yield from self.examples.texts()
            return
        for ex in self.examples:
            if self.task == "lm":
                yield ex  # type: ignore[misc]
            elif self.task == "seq2seq":
                yield from ex
            else:
                yield ex[1]

    def __repr__(self) -> str:
        extra = f", labels={self.labels!r}" if self.labels else ""
        return (
            f"TextDataset(name={self.name!r}, task={self.task!r}, split={self.split!r}, "
            f"{len(self)} examples{extra})"
        )


def check_workers(workers: object) -> None:
    """Refuse a ``workers`` that is neither None nor an int >= 1."""
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise ValueError(
            f"workers is {workers!r}: allowed an int >= 1 (the most processes that encode the "
            "data), or None (every CPU)"
        )


def check_tokenizer_sample(sample: object) -> None:
    """Refuse a ``tokenizer_sample`` that is neither None nor an int >= 0."""
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 0
    ):
        raise ValueError(
            f"tokenizer_sample is {sample!r}: allowed an int >= 0 (the most characters a BPE "
            "tokenizer learns its merges from; 0: all of them), or None (100,000,000)"
        )


def _check_example(task: str, ex: object, i: int) -> None:
    if task == "lm":
        if not isinstance(ex, str):
            raise ValueError(f"examples[{i}] is {type(ex).__name__}: allowed str for task 'lm'")
        return
    what = "(source, target)" if task == "seq2seq" else "(label, text)"
    if not (isinstance(ex, tuple) and len(ex) == 2 and all(isinstance(s, str) for s in ex)):
        raise ValueError(f"examples[{i}] is {ex!r}: allowed a pair of str {what} for {task!r}")
