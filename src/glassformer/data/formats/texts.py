"""The texts of an lm split's documents on disk as a lazy sequence: ``TextDataset.examples``
for data read as a stream, so that no text is held until something iterates them (training a
tokenizer, a check of the vocabulary)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..documents import Documents

__all__ = ["DocumentTexts"]


class DocumentTexts(Sequence):
    """The ``count`` documents of ``source``, each as one ``str``, read when asked for."""

    def __init__(self, source: Documents, count: int) -> None:
        self.source, self.count = source, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[str]:
        for blocks in self.source.documents():
            yield "".join(blocks)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return list(self)[i]
        k = i + self.count if i < 0 else i
        if not 0 <= k < self.count:
            raise IndexError(f"document {i} of {self.count}")
        for j, text in enumerate(self):
            if j == k:
                return text
        raise IndexError(f"document {i} of {self.count}")  # the data changed on disk

    def __repr__(self) -> str:
        return f"DocumentTexts({self.source.label}, {self.count} documents)"
