"""The tokenizer JSON file: writing it readably and atomically, and validating ids on load.

Part of the "Tokenization" section of the notes ("Formal Algorithms for Transformers"): each
vocabulary element is associated with a unique integer, so a file must give every id in 0 ..
vocab_size - 1 exactly once, and must contain the special tokens.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from ..safe_write import write_text

FORMAT_NAME = "glassformer-tokenizer"
FORMAT_VERSION = 1


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to a temp file beside ``path``, then ``os.replace`` it there."""
    write_text(path, text)


def dumps(d: dict[str, Any]) -> str:
    """JSON with one top-level key per line and one list item / dict entry per line."""

    def dump(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False)

    def value(v: Any) -> str:
        if isinstance(v, list) and v:
            return "[\n  " + ",\n  ".join(dump(x) for x in v) + "\n ]"
        if isinstance(v, dict) and v:
            return "{\n  " + ",\n  ".join(f"{dump(k)}: {dump(x)}" for k, x in v.items()) + "\n }"
        return dump(v)

    return "{\n" + ",\n".join(f" {dump(k)}: {value(v)}" for k, v in d.items()) + "\n}\n"


def validate_special(special: Any, required: tuple[str, ...]) -> dict[str, int]:
    """Check a special-token table: a dict holding every ``required`` token, unique ids."""
    if not isinstance(special, dict):
        raise ValueError(f"special_tokens is {special!r}: allowed a JSON object token -> id")
    missing = [s for s in required if s not in special]
    if missing:
        raise ValueError(
            f"special_tokens lacks {missing}: allowed a table containing all of {required}"
        )
    seen: dict[int, str] = {}
    for s, i in special.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"special_tokens[{s!r}] is {i!r}: allowed a non-negative int")
        if i in seen:
            raise ValueError(
                f"special_tokens gives id {i} to both {seen[i]!r} and {s!r}: ids must be unique"
            )
        seen[i] = s
    return dict(special)


def check_ids_contiguous(ids: Iterable[int], what: str) -> int:
    """Check that ``ids`` are the integers 0 .. n-1, each exactly once; return n."""
    seen: set[int] = set()
    dups: list[int] = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"{what} contains id {i!r}: allowed non-negative ints")
        if i in seen:
            dups.append(i)
        seen.add(i)
    if dups:
        raise ValueError(f"{what} has duplicate ids {sorted(set(dups))[:10]}: each id once")
    n = len(seen)
    beyond = sorted(i for i in seen if i >= n)  # n unique ids fill 0 .. n-1 unless some are past it
    if beyond:
        # the gaps are looked for in 0 .. n-1 only: memory in proportion to n, never to an id
        missing = [i for i in range(n) if i not in seen][:10]
        raise ValueError(
            f"{what} is missing ids {missing}: allowed exactly 0 .. {n - 1} for {n} tokens, "
            f"but it gives id {beyond[-1]}"
        )
    return n
