"""Reading and writing BPE vocabularies in the GPT-2 and tiktoken file formats.

* GPT-2 / Hugging Face: ``vocab.json`` (token string -> id) and ``merges.txt`` (one merge
  ``"left right"`` per line, in priority order, after a ``#version`` line). Token strings spell
  bytes with GPT-2's byte-to-unicode table (``bytes_to_unicode``): printable Latin-1 bytes stand
  for themselves, the other 68 bytes for the code points 256, 257, ... (so ``" "`` is ``"Ġ"``).
* tiktoken: one ``"<base64 of the token bytes> <rank>"`` line per token; the rank is both the id
  and the merge priority. The merges are recovered from the ranks (each multi-byte token is the
  merge of the two parts that BPE with the lower ranks splits it into).

Special tokens of a loaded vocabulary (see the ``bpe`` module docstring): entries of a
``vocab.json`` that are neither a byte nor a merge result (``"<|endoftext|>"``, or the
``"<PAD>"`` ... written by ``save_gpt2_files``) keep their ids as special tokens; any of the five
specials still missing take the lowest ids that the file leaves free.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ..structured import loads_json
from .base import SPECIAL_TOKENS
from .fileformat import write_atomic

Merge = tuple[int, int, int]
Layout = tuple[list[int], list[Merge], dict[str, int]]  # byte_ids, merges, special tokens


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    keep += range(ord("®"), ord("ÿ") + 1)
    table: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def bytes_to_token_str(data: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in data)


def place_specials(special: dict[str, int], used: Iterable[int]) -> dict[str, int]:
    """Give each of the five specials missing from ``special`` the lowest id not yet used."""
    special = dict(special)
    taken = set(used) | set(special.values())
    free = 0
    for s in SPECIAL_TOKENS:
        if s in special:
            continue
        while free in taken:
            free += 1
        special[s] = free
        taken.add(free)
    return special


# ---- GPT-2 / Hugging Face ---------------------------------------------------------------------
def read_gpt2_files(
    vocab_json: str | os.PathLike[str], merges_txt: str | os.PathLike[str]
) -> Layout:
    with open(vocab_json, "rb") as f:
        vocab = loads_json(f.read(), f"vocab_json {str(vocab_json)!r}")
    if not isinstance(vocab, dict):
        raise ValueError(f"vocab_json {str(vocab_json)!r} must hold a JSON object token -> id")
    seen: dict[int, str] = {}
    for s, i in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"vocab_json gives {s!r} the id {i!r}: allowed non-negative ints")
        if i in seen:
            raise ValueError(f"vocab_json gives id {i} to both {seen[i]!r} and {s!r}")
        seen[i] = s
    byte_str = bytes_to_unicode()
    missing = [b for b in range(256) if byte_str[b] not in vocab]
    if missing:
        raise ValueError(
            f"vocab_json lacks the single-byte tokens of bytes {missing[:10]}: "
            "a byte-level vocabulary must contain all 256"
        )
    byte_ids = [vocab[byte_str[b]] for b in range(256)]
    merges: list[Merge] = []
    ordinary = {byte_str[b] for b in range(256)}
    with open(merges_txt, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line or (lineno == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"merges_txt line {lineno} is {line!r}: allowed 'left right'")
            left, right = parts
            for p in (left, right, left + right):
                if p not in vocab:
                    raise ValueError(f"merges_txt line {lineno}: token {p!r} is not in vocab_json")
            merges.append((vocab[left], vocab[right], vocab[left + right]))
            ordinary.add(left + right)
    special = {s: i for s, i in vocab.items() if s not in ordinary}
    return byte_ids, merges, place_specials(special, vocab.values())


def write_gpt2_files(
    directory: str | os.PathLike[str],
    vocab: list[bytes],
    merges: list[Merge],
    special: dict[str, int],
) -> tuple[Path, Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    special_ids = set(special.values())
    table: dict[str, int] = dict(special)
    for i, data in enumerate(vocab):
        if i in special_ids:
            continue
        s = bytes_to_token_str(data)
        if s in table:
            raise ValueError(
                f"ids {table[s]} and {i} both spell {s!r}: vocab.json can hold each token once"
            )
        table[s] = i
    table = dict(sorted(table.items(), key=lambda kv: kv[1]))
    lines = ["#version: 0.2"]
    spell = bytes_to_token_str
    lines += [f"{spell(vocab[a])} {spell(vocab[b])}" for a, b, _ in merges]
    vocab_path, merges_path = directory / "vocab.json", directory / "merges.txt"
    write_atomic(vocab_path, json.dumps(table, ensure_ascii=False, indent=0) + "\n")
    write_atomic(merges_path, "\n".join(lines) + "\n")
    return vocab_path, merges_path


# ---- tiktoken -----------------------------------------------------------------------------------
def read_tiktoken_file(path: str | os.PathLike[str]) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            try:
                token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
                if len(parts) != 2 or rank < 0:
                    raise ValueError
            except (ValueError, IndexError):
                raise ValueError(
                    f"path {str(path)!r} line {lineno} is {line[:60]!r}: "
                    "allowed '<base64 token> <rank>'"
                ) from None
            if token in ranks:
                raise ValueError(f"path {str(path)!r} line {lineno}: token {token!r} is repeated")
            ranks[token] = rank
    return ranks


def ranks_to_layout(ranks: dict[bytes, int]) -> Layout:
    """Byte ids, merges (recovered from the ranks) and specials of a tiktoken rank table."""
    ids = list(ranks.values())
    if len(set(ids)) != len(ids):
        raise ValueError("mergeable ranks give the same rank to two tokens: allowed unique ranks")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ValueError(
            f"mergeable ranks lack the single bytes {missing[:10]}: all 256 are required"
        )
    byte_ids = [ranks[bytes([b])] for b in range(256)]
    merges: list[Merge] = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = _split_by_ranks(token, ranks, rank)
        if len(parts) != 2:
            raise ValueError(
                f"token {token!r} (rank {rank}) is not the merge of two lower-ranked tokens: "
                "mergeable ranks must come from BPE training"
            )
        merges.append((ranks[parts[0]], ranks[parts[1]], rank))
    return byte_ids, merges, place_specials({}, ids)


def _split_by_ranks(token: bytes, ranks: dict[bytes, int], max_rank: int) -> list[bytes]:
    """tiktoken's merge rule restricted to ranks below ``max_rank``: repeatedly join the
    adjacent parts whose concatenation has the lowest rank."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best, best_rank = -1, max_rank
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < best_rank:
                best, best_rank = i, r
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def write_tiktoken_file(path: str | os.PathLike[str], ranks: dict[bytes, int]) -> None:
    lines = [
        f"{base64.b64encode(t).decode('ascii')} {r}"
        for t, r in sorted(ranks.items(), key=lambda kv: kv[1])
    ]
    write_atomic(Path(path), "\n".join(lines) + "\n")
