"""Character-level tokenizer ("Tokenization - Character-level" in the notes, "Formal Algorithms
for Transformers").

V is the set of characters (Unicode code points) seen in training, sorted by code point and
numbered from 5 upwards after the five special tokens (0 <PAD>, 1 <BOS>, 2 <EOS>, 3 <UNK>,
4 <MASK>). A character not seen in training encodes to <UNK>. Decoding is exact for texts
made of seen characters: ``decode(encode(s)) == s``.

Training is ``count`` then ``train_counts``: ``count`` gives the characters of some texts (each
with count 1: only which characters occur matters), and the counts of several calls add up
(``Counter.update``), so texts counted in pieces, by several processes, train the same
vocabulary as all of them at once (parallel.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .base import N_SPECIAL, Tokenizer
from .fileformat import check_ids_contiguous
from .texts import iter_texts


class CharTokenizer(Tokenizer):
    """One id per character; unseen characters -> <UNK>."""

    kind = "char"

    def __init__(self) -> None:
        super().__init__()
        self._set_vocab([])

    def _set_vocab(self, chars: list[str]) -> None:
        """Install ordinary tokens ``chars`` at ids N_SPECIAL, N_SPECIAL + 1, ..."""
        self._stoi: dict[str, int] = {c: N_SPECIAL + k for k, c in enumerate(chars)}
        self._rebuild_itos()

    def _rebuild_itos(self) -> None:
        n = len(self._special) + len(self._stoi)
        itos = [""] * n
        for s, i in self._special.items():
            itos[i] = s
        for c, i in self._stoi.items():
            itos[i] = c
        self._itos = itos

    @property
    def vocab_size(self) -> int:
        return len(self._itos)

    def train(self, texts: str | Iterable[str]) -> CharTokenizer:
        """Vocabulary = the set of characters of ``texts``, sorted by code point. No options."""
        return self.train_counts(self.count(texts))

    def count(self, texts: str | Iterable[str]) -> Counter[str]:
        """The characters of ``texts``, in code-point order, each with count 1 (the module
        docstring)."""
        chars: set[str] = set()
        for t in iter_texts(texts):
            chars.update(t)
        return Counter(dict.fromkeys(sorted(chars), 1))

    def train_counts(self, counts: Mapping[str, int]) -> CharTokenizer:
        """Vocabulary = the characters of ``counts`` (``count``'s, added up), sorted by code
        point."""
        self._set_vocab(sorted(c for c, n in counts.items() if n > 0))
        return self

    def _encode_ordinary(self, text: str) -> list[int]:
        get, unk = self._stoi.get, self.unk_id
        return [get(c, unk) for c in text]

    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        ids = self._checked_ids(ids)
        itos = self._itos
        if skip_special:
            special = self.special_ids
            return "".join([itos[i] for i in ids if i not in special])
        return "".join([itos[i] for i in ids])

    def id_to_token(self, i: int) -> str:
        return self._itos[self._check_id(i)]

    def token_to_id(self, s: str) -> int:
        if s in self._special:
            return self._special[s]
        if s in self._stoi:
            return self._stoi[s]
        raise ValueError(f"token {s!r} is not in the vocabulary of {self.vocab_size} tokens")

    def _state(self) -> dict[str, Any]:
        return {"vocab": dict(self._stoi)}

    def _set_state(self, d: dict[str, Any]) -> None:
        vocab = d.get("vocab")
        if not isinstance(vocab, dict):
            raise ValueError(f"vocab is {type(vocab).__name__}: allowed a JSON object char -> id")
        for c in vocab:
            if len(c) != 1:
                raise ValueError(f"vocab contains {c!r}: allowed single characters only")
        check_ids_contiguous([*self._special.values(), *vocab.values()], "char vocab")
        self._stoi = dict(vocab)
        self._rebuild_itos()
