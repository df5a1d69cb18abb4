"""A long text cut into pieces of about a given size, each cut where the char, word, GPT-2 and
cl100k BPE tokenizers split the text anyway: before a single space (else a single newline)
between two other characters. Encoding, or counting for training, piece by piece then gives
what the whole text at once gives, with a piece's memory instead of the text's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["PIECE_CHARS", "cut", "pieces"]

PIECE_CHARS = 1 << 20  # characters a piece, about (tokenizer training reads pieces this size)
MAX_PENDING = 8  # without a place to cut, at most this many pieces' worth wait


def pieces(blocks: Iterable[str], size: int | None = None) -> Iterator[str]:
    """``blocks`` (a text, a block at a time) joined and cut again into pieces of about
    ``size`` characters, each cut before a single space (else newline) between two other
    characters (``cut``); ``size`` None: ``PIECE_CHARS``."""
    size = size or PIECE_CHARS
    pending = ""
    for block in blocks:
        pending += block
        while len(pending) >= size:
            at = cut(pending, size) or cut(pending)  # the last place before size, else after
            if at == 0 and len(pending) < MAX_PENDING * size:
                break  # no place to cut yet: read on
            at = at or len(pending)  # none in MAX_PENDING pieces' worth: cut anywhere
            yield pending[:at]
            pending = pending[at:]
    if pending:
        yield pending


def cut(text: str, end: int | None = None) -> int:
    """The last index i < ``end`` (default: the text's length) with ``text[i]`` a space (else a
    newline) and ``text[i - 1]``, ``text[i + 1]`` not whitespace; 0 when there is none."""
    for sep in (" ", "\n"):
        i = len(text) - 1 if end is None else min(end, len(text) - 1)
        while (i := text.rfind(sep, 1, i)) > 0:
            if not text[i - 1].isspace() and not text[i + 1].isspace():
                return i
    return 0
