"""Word-level tokenizer ("Tokenization - Word-level" in the notes, "Formal Algorithms for
Transformers").

Splitting (``WORD_PATTERN``, the ``regex`` module, Unicode-aware), first match wins:

* a number with decimal / thousands separators: ``3.14``, ``1,000`` (not followed by a letter);
* a word: a run of ``\\w`` characters, joined by inner apostrophes or hyphens:
  ``don't``, ``o'er``, ``well-known``, ``León``;
* a newline ``"\\n"`` (kept as a token of its own, so line structure survives);
* any other single character that is not whitespace: punctuation and symbols, one each.

Whitespace normalisation (exact): whitespace is Unicode White_Space (``\\s`` of ``regex``).
Every ``"\\n"`` is a token and is kept; all other whitespace (spaces, tabs, ``"\\r"``, ...)
only separates tokens and is dropped. ``decode`` joins the tokens with one space, except:

* no space before ``, . ! ? ; : ' ’ ) ] } ” % …`` (``NO_SPACE_BEFORE``);
* no space after ``( [ { “ ‘ ¿ ¡`` (``NO_SPACE_AFTER``);
* no space on either side of a ``"\\n"`` token;
* the straight double quote ``"`` alternates: odd ones open (no space after), even ones close
  (no space before), counted within one ``decode`` call.

So ``decode(encode(s)) == WordTokenizer.normalize(s)`` when every word of ``s`` is in the
vocabulary (unknown words decode as ``<UNK>``), ``normalize`` is idempotent, and it keeps the
non-whitespace characters of ``s`` and its newlines, in order.

Vocabulary: the words of the training texts with count >= ``min_freq``, most frequent first,
ties broken by code-point order of the word; at most ``max_vocab`` ids in all (the five special
tokens included). Ids start at 5 after the specials. Training is ``count`` (the words of some
texts and their counts) then ``train_counts``; the counts of several calls add up
(``Counter.update``), so texts counted in pieces, by several processes, train the same
vocabulary as all of them at once (parallel.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import regex

from .base import N_SPECIAL, Tokenizer
from .fileformat import check_ids_contiguous
from .texts import iter_texts

WORD_PATTERN = r"\d+(?:[.,]\d+)+(?!\w)|\w+(?:['’\-]\w+)*|\n|[^\w\s]"
NO_SPACE_BEFORE = frozenset(",.!?;:'’)]}”%…")
NO_SPACE_AFTER = frozenset("([{“‘¿¡")

_WORD_RE = regex.compile(WORD_PATTERN)


def split_words(text: str) -> list[str]:
    """The word-level pre-tokenisation: words, numbers, newlines, single punctuation marks."""
    return _WORD_RE.findall(text)


def join_words(tokens: Iterable[str]) -> str:
    """Join tokens with the spacing rules of the module docstring."""
    out: list[str] = []
    glue_next = True  # no space before the first token
    quote_open = False
    for tok in tokens:
        if tok == '"':
            quote_open = not quote_open
            no_before, no_after = not quote_open, quote_open
        elif tok == "\n":
            no_before = no_after = True
        else:
            no_before, no_after = tok in NO_SPACE_BEFORE, tok in NO_SPACE_AFTER
        if not (glue_next or no_before):
            out.append(" ")
        out.append(tok)
        glue_next = no_after
    return "".join(out)


class WordTokenizer(Tokenizer):
    """One id per word / punctuation mark / newline; out-of-vocabulary words -> <UNK>."""

    kind = "word"

    def __init__(self) -> None:
        super().__init__()
        self._set_vocab([])

    @staticmethod
    def normalize(text: str) -> str:
        """What ``decode(encode(text))`` gives when all words of ``text`` are known."""
        return join_words(split_words(text))

    def _set_vocab(self, words: list[str]) -> None:
        self._stoi: dict[str, int] = {w: N_SPECIAL + k for k, w in enumerate(words)}
        self._rebuild_itos()

    def _rebuild_itos(self) -> None:
        itos = [""] * (len(self._special) + len(self._stoi))
        for s, i in self._special.items():
            itos[i] = s
        for w, i in self._stoi.items():
            itos[i] = w
        self._itos = itos

    @property
    def vocab_size(self) -> int:
        return len(self._itos)

    def train(
        self,
        texts: str | Iterable[str],
        *,
        min_freq: int = 1,
        max_vocab: int | None = None,
    ) -> WordTokenizer:
        """Count the words of ``texts``; keep those with count >= min_freq, most frequent
        first (ties: code-point order), at most ``max_vocab`` ids including the 5 specials."""
        _check_options(min_freq, max_vocab)
        return self.train_counts(self.count(texts), min_freq=min_freq, max_vocab=max_vocab)

    def count(self, texts: str | Iterable[str]) -> Counter[str]:
        """The words of ``texts`` (``split_words``) and how often each occurs."""
        counts: Counter[str] = Counter()
        for t in iter_texts(texts):
            counts.update(_WORD_RE.findall(t))
        return counts

    def train_counts(
        self, counts: Mapping[str, int], *, min_freq: int = 1, max_vocab: int | None = None
    ) -> WordTokenizer:
        """The vocabulary of ``train`` from word counts (``count``'s, added up)."""
        _check_options(min_freq, max_vocab)
        words = sorted(
            (w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w)
        )
        if max_vocab is not None:
            words = words[: max_vocab - N_SPECIAL]
        self._set_vocab(words)
        return self

    def _encode_ordinary(self, text: str) -> list[int]:
        get, unk = self._stoi.get, self.unk_id
        return [get(w, unk) for w in _WORD_RE.findall(text)]

    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        ids = self._checked_ids(ids)
        itos = self._itos
        if skip_special:
            special = self.special_ids
            return join_words([itos[i] for i in ids if i not in special])
        return join_words([itos[i] for i in ids])

    def id_to_token(self, i: int) -> str:
        return self._itos[self._check_id(i)]

    def token_to_id(self, s: str) -> int:
        if s in self._special:
            return self._special[s]
        if s in self._stoi:
            return self._stoi[s]
        raise ValueError(f"token {s!r} is not in the vocabulary of {self.vocab_size} tokens")

    def _state(self) -> dict[str, Any]:
        return {"pattern": WORD_PATTERN, "vocab": dict(self._stoi)}

    def _set_state(self, d: dict[str, Any]) -> None:
        if d.get("pattern") != WORD_PATTERN:
            raise ValueError(
                f"pattern is {d.get('pattern')!r}: allowed only this version's {WORD_PATTERN!r}"
            )
        vocab = d.get("vocab")
        if not isinstance(vocab, dict):
            raise ValueError(f"vocab is {type(vocab).__name__}: allowed a JSON object word -> id")
        bad = [w for w in vocab if w in self._special or split_words(w) != [w]]
        if bad:
            raise ValueError(f"vocab contains {bad[:5]}: allowed single words (see WORD_PATTERN)")
        check_ids_contiguous([*self._special.values(), *vocab.values()], "word vocab")
        self._stoi = dict(vocab)
        self._rebuild_itos()


def _check_options(min_freq: int, max_vocab: int | None) -> None:
    if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
        raise ValueError(f"min_freq is {min_freq!r}: allowed an int >= 1")
    if max_vocab is not None and (
        isinstance(max_vocab, bool) or not isinstance(max_vocab, int) or max_vocab < N_SPECIAL
    ):
        raise ValueError(
            f"max_vocab is {max_vocab!r}: allowed None or an int >= {N_SPECIAL} "
            f"(the vocabulary includes the {N_SPECIAL} special tokens)"
        )
