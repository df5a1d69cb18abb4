"""The texts a tokenizer trains on: one string, or an iterable of strings read once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["iter_texts"]


def iter_texts(texts: str | Iterable[str], argname: str = "texts") -> Iterator[str]:
    """Yield the training texts: one string, or each string of an iterable (read once)."""
    if isinstance(texts, str):
        yield texts
        return
    if isinstance(texts, bytes | bytearray):
        raise TypeError(f"{argname} must be a str or an iterable of str, got bytes")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{argname}[{i}] must be a str, got {type(t).__name__}")
        yield t
