"""Byte-level BPE tokenizer ("Tokenization - Subword-level" in the notes, "Formal Algorithms for
Transformers").

Ids of a tokenizer trained by glassformer::

    0 .. 4      <PAD> <BOS> <EOS> <UNK> <MASK>       (fixed, as for every tokenizer)
    5 .. 260    the 256 bytes: byte x has id 5 + x
    261 ..      the merges, in the order they were learned (merge k makes id 261 + k)

Loaded vocabularies (``from_gpt2_files``, ``from_tiktoken_file``) keep the ids of their files,
so GPT-2 / tiktoken ids come out unchanged. Their extra special tokens (e.g. GPT-2's
``<|endoftext|>`` = 50256) stay special, and the five glassformer specials take the lowest ids
the file leaves free: for GPT-2 that is 50257 .. 50261 (<PAD> .. <MASK>), for a file written
by ``save_gpt2_files`` / ``save_tiktoken_file`` it is 0 .. 4 again. The ids in use are
recorded in the JSON file and exposed as ``tok.pad_id`` ... ``tok.mask_id``: the constants
``PAD_ID`` ... hold for tokenizers trained by glassformer, the attributes for all.

Encoding: the text is split by a pre-tokenisation regex (``pattern=``: ``"gpt2"`` (default),
``"cl100k"`` a.k.a. ``"gpt4"``, or a regex string that ``bpe_patterns`` accepts: no capturing
group, pieces that cover every text; its work per encode call is bounded in time, see
``bpe_patterns``), each piece is encoded as UTF-8 bytes, and
within a piece the adjacent pair with the lowest merge priority (leftmost on ties) is merged,
again and again, until no pair can merge (bpe_encode.py). Pieces are cached in a
bounded dict (cleared when it reaches ``cache_size`` entries).

Lossless: ``decode(encode(s)) == s`` for every str ``s`` that can be encoded as UTF-8; a str
holding a lone surrogate (e.g. ``"\\ud800"``) cannot and raises ValueError. ``decode`` of an
arbitrary id sequence may produce invalid UTF-8; it is replaced by U+FFFD.

``id_to_token`` spells a token's bytes with GPT-2's byte-to-unicode table (``" the"`` is
``"Ġthe"``), the same strings as in ``vocab.json``; ``id_to_bytes`` gives the raw bytes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import chain, pairwise
from pathlib import Path
from typing import Any

from . import bpe_io
from .base import DEFAULT_SPECIAL_IDS, N_SPECIAL, Tokenizer
from .bpe_encode import PieceCache, encode_piece
from .bpe_patterns import PATTERNS, Deadline, SplitPattern
from .bpe_train import count_pieces, train_merges
from .fileformat import check_ids_contiguous
from .texts import iter_texts

N_BYTES = 256
FIRST_MERGE_ID = N_SPECIAL + N_BYTES  # 261
DEFAULT_CACHE_SIZE = 100_000

Merge = tuple[int, int, int]  # (id_a, id_b, new_id), listed in priority order


class BPETokenizer(Tokenizer):
    """Byte-level byte-pair encoding with a GPT-2 / cl100k style pre-tokeniser."""

    kind = "bpe"

    def __init__(self, pattern: str = "gpt2", *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        super().__init__()
        self._cache_size = _check_cache_size(cache_size)
        self._set_pattern(pattern)
        self._install(_standard_byte_ids(), [], DEFAULT_SPECIAL_IDS)

    # ---- set-up ---------------------------------------------------------------------------
    def _set_pattern(self, pattern: str, *, raw: bool = False) -> None:
        self._split = SplitPattern(pattern, raw=raw)
        self.pattern_name, self.pattern = self._split.name, self._split.source

    def _install(self, byte_ids: list[int], merges: list[Merge], special: dict[str, int]) -> None:
        """Validate and install a vocabulary: byte -> id, merges in priority order, specials."""
        if len(byte_ids) != N_BYTES:
            raise ValueError(f"byte_ids has {len(byte_ids)} entries: allowed exactly {N_BYTES}")
        merges = [tuple(m) for m in merges]
        for k, m in enumerate(merges):
            if len(m) != 3 or not all(type(x) is int for x in m):
                raise ValueError(f"merges[{k}] is {list(m)}: allowed [id_a, id_b, new_id]")
        n = check_ids_contiguous(
            [*special.values(), *byte_ids, *(m[2] for m in merges)], "bpe vocab"
        )
        vocab: list[bytes | None] = [None] * n
        for b, i in enumerate(byte_ids):
            vocab[i] = bytes([b])
        ranks: dict[tuple[int, int], int] = {}
        for k, (a, b, new) in enumerate(merges):
            if not (0 <= a < n and 0 <= b < n and vocab[a] is not None and vocab[b] is not None):
                raise ValueError(
                    f"merges[{k}] = {[a, b, new]} uses an id that is neither a byte nor the "
                    "result of an earlier merge: allowed only those"
                )
            if (a, b) in ranks:
                raise ValueError(f"merges[{k}] repeats the pair {[a, b]}: each pair once")
            ranks[(a, b)] = k
            vocab[new] = vocab[a] + vocab[b]  # type: ignore[operator]
        for s, i in special.items():
            vocab[i] = s.encode("utf-8")
        self._set_special_tokens(special)
        self._vocab: list[bytes] = vocab  # type: ignore[assignment]
        self._byte_ids = list(byte_ids)
        self._merges: list[Merge] = merges  # type: ignore[assignment]
        self._ranks = ranks
        self._merge_new = [m[2] for m in merges]
        self._token_index: dict[str, int] | None = None
        self.clear_cache()

    def clear_cache(self) -> None:
        """Forget the cached encodings of pieces."""
        self._cache = PieceCache(self._bpe_piece, self._cache_size)

    # ---- properties -----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def merges(self) -> list[Merge]:
        """(id_a, id_b, new_id) in priority order (a copy)."""
        return list(self._merges)

    # ---- training -------------------------------------------------------------------------
    def train(
        self, texts: str | Iterable[str], *, vocab_size: int, min_frequency: int = 1
    ) -> BPETokenizer:
        """Learn ``vocab_size - 261`` merges from ``texts`` (replacing any previous vocabulary;
        the pattern is kept). Stops early if no pair occurs ``min_frequency`` times, so
        ``self.vocab_size`` may come out smaller than asked. See ``bpe_train`` for the algorithm
        and the tie-breaking rule."""
        _check_train_options(vocab_size, min_frequency)
        counts = self.count(texts)
        return self.train_counts(counts, vocab_size=vocab_size, min_frequency=min_frequency)

    def count(self, texts: str | Iterable[str]) -> Counter[str]:
        """The distinct pre-tokenized pieces of ``texts`` (this tokenizer's pattern) and how
        often each occurs; the counts of several calls add up (``Counter.update``), so texts
        counted in parts, by several processes, train the same merges (parallel.py)."""
        return count_pieces(iter_texts(texts), self._split.split)

    def train_counts(
        self, counts: Mapping[str, int], *, vocab_size: int, min_frequency: int = 1
    ) -> BPETokenizer:
        """``train`` from the counts of pieces (``count``'s, added up)."""
        _check_train_options(vocab_size, min_frequency)
        byte_ids = _standard_byte_ids()
        merges = train_merges(
            counts, byte_ids, FIRST_MERGE_ID, vocab_size - FIRST_MERGE_ID, min_frequency
        )
        self._install(byte_ids, merges, DEFAULT_SPECIAL_IDS)
        return self

    # ---- encoding -------------------------------------------------------------------------
    def _encode_ordinary(self, text: str, deadline: Deadline | None = None) -> list[int]:
        pieces = self._split.split(text, deadline)
        return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))

    def _encode_parts(self, parts: list[str]) -> list[list[int]]:
        # the parts of one encode call (between special tokens) share one time budget
        deadline = self._split.deadline(sum(map(len, parts)))
        return [self._encode_ordinary(part, deadline) if part else [] for part in parts]

    def _bpe_piece(self, piece: str) -> tuple[int, ...]:
        return encode_piece(piece, self._byte_ids, self._ranks, self._merge_new)

    # ---- decoding and the token table ------------------------------------------------------
    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        ids = self._checked_ids(ids)
        vocab = self._vocab
        if skip_special:
            special = self.special_ids
            data = b"".join([vocab[i] for i in ids if i not in special])
        else:
            data = b"".join([vocab[i] for i in ids])
        return data.decode("utf-8", errors="replace")

    def id_to_bytes(self, i: int) -> bytes:
        """The bytes of token ``i`` (a special token: its literal string in UTF-8)."""
        return self._vocab[self._check_id(i)]

    def id_to_token(self, i: int) -> str:
        i = self._check_id(i)
        if i in self._special_by_id:
            return self._special_by_id[i]
        return bpe_io.bytes_to_token_str(self._vocab[i])

    def token_to_id(self, s: str) -> int:
        if s in self._special:
            return self._special[s]
        if self._token_index is None:
            self._token_index = {}
            for i, data in enumerate(self._vocab):
                if i not in self._special_by_id:
                    self._token_index.setdefault(bpe_io.bytes_to_token_str(data), i)
        if s in self._token_index:
            return self._token_index[s]
        raise ValueError(
            f"token {s!r} is not in the vocabulary of {self.vocab_size} tokens "
            "(BPE tokens are spelled with GPT-2's byte-to-unicode table, ' the' as 'Ġthe')"
        )

    # ---- JSON -------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {
            "pattern_name": self.pattern_name,
            "pattern": self.pattern,
            "byte_ids": list(self._byte_ids),
            "merges": [list(m) for m in self._merges],
        }

    def _set_state(self, d: dict[str, Any]) -> None:
        self._cache_size = DEFAULT_CACHE_SIZE
        pattern, name = d.get("pattern"), d.get("pattern_name")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"pattern is {pattern!r}: allowed a non-empty regex string")
        if name is not None and PATTERNS.get(name) != pattern:
            raise ValueError(
                f"pattern_name is {name!r} but pattern differs from it: allowed null or one of "
                f"{sorted(PATTERNS)} with its exact pattern"
            )
        if name is None:
            self._set_pattern(pattern, raw=True)
        else:
            self._set_pattern(name)
        byte_ids, merges = d.get("byte_ids"), d.get("merges")
        if not isinstance(byte_ids, list):
            raise ValueError(f"byte_ids is {byte_ids!r}: allowed a list of {N_BYTES} ids")
        if not isinstance(merges, list) or not all(isinstance(m, list) for m in merges):
            raise ValueError("merges must be a list of [id_a, id_b, new_id] lists")
        self._install(byte_ids, merges, self._special)

    # ---- GPT-2 and tiktoken files ----------------------------------------------------------
    @classmethod
    def from_gpt2_files(
        cls,
        vocab_json: str | os.PathLike[str],
        merges_txt: str | os.PathLike[str],
        *,
        pattern: str = "gpt2",
    ) -> BPETokenizer:
        """Load GPT-2 / Hugging Face byte-level BPE files (``vocab.json``, ``merges.txt``)."""
        tok = cls(pattern)
        tok._install(*bpe_io.read_gpt2_files(vocab_json, merges_txt))
        return tok

    def save_gpt2_files(self, directory: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``vocab.json`` and ``merges.txt`` into ``directory``; return their paths."""
        return bpe_io.write_gpt2_files(directory, self._vocab, self._merges, self._special)

    @classmethod
    def from_tiktoken_file(
        cls, path: str | os.PathLike[str], *, pattern: str = "gpt2"
    ) -> BPETokenizer:
        """Load a tiktoken rank file (``<base64 token> <rank>`` lines). The file does not name
        its pattern: pass ``pattern="cl100k"`` for cl100k_base."""
        tok = cls(pattern)
        tok._install(*bpe_io.ranks_to_layout(bpe_io.read_tiktoken_file(path)))
        return tok

    def export_tiktoken_ranks(self) -> dict[bytes, int]:
        """Token bytes -> id for the ordinary tokens, as ``tiktoken.Encoding(mergeable_ranks=)``
        takes them. Requires merge ids that grow with merge priority (true for trained and
        tiktoken-loaded tokenizers) and distinct token bytes."""
        if any(x >= y for x, y in pairwise(self._merge_new)):
            raise ValueError(
                "merges: new ids do not grow with merge priority, which tiktoken ranks require"
            )
        ranks: dict[bytes, int] = {}
        for i, data in enumerate(self._vocab):
            if i in self._special_by_id:
                continue
            if data in ranks:
                raise ValueError(
                    f"ids {ranks[data]} and {i} are both {data!r}: ranks need unique bytes"
                )
            ranks[data] = i
        return ranks

    def save_tiktoken_file(self, path: str | os.PathLike[str]) -> None:
        """Write ``export_tiktoken_ranks()`` as a tiktoken rank file."""
        bpe_io.write_tiktoken_file(path, self.export_tiktoken_ranks())


def _check_train_options(vocab_size: int, min_frequency: int) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise ValueError(f"vocab_size is {vocab_size!r}: allowed an int >= {FIRST_MERGE_ID}")
    if vocab_size < FIRST_MERGE_ID:
        raise ValueError(
            f"vocab_size is {vocab_size}: allowed >= {FIRST_MERGE_ID} "
            f"({N_SPECIAL} special tokens + {N_BYTES} bytes)"
        )
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int):
        raise ValueError(f"min_frequency is {min_frequency!r}: allowed an int >= 1")
    if min_frequency < 1:
        raise ValueError(f"min_frequency is {min_frequency}: allowed an int >= 1")


def _standard_byte_ids() -> list[int]:
    return list(range(N_SPECIAL, N_SPECIAL + N_BYTES))


def _check_cache_size(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"cache_size is {n!r}: allowed an int >= 0 (0 disables the cache)")
    return n
