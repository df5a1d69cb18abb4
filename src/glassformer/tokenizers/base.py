"""The tokenizer interface shared by the char, word and BPE tokenizers.

Implements the "Tokenization" part of the notes ("Formal Algorithms for Transformers"): every
vocabulary element is associated with a unique integer, and five special tokens are added to the
vocabulary::

    id  token    use
    0   <PAD>    padding up to the sequence length
    1   <BOS>    beginning of sequence
    2   <EOS>    end of sequence
    3   <UNK>    a character / word outside the vocabulary
    4   <MASK>   the masked position of masked language modelling

These ids are fixed for every tokenizer that glassformer trains. A BPE tokenizer *loaded*
from GPT-2 or tiktoken files keeps the ids of those files and gives the five specials the
lowest ids the file leaves free (for GPT-2: 50257 .. 50261; see ``bpe``); its ids are recorded
in its JSON file and exposed as ``tok.pad_id`` etc., so code that reads the attributes instead
of the constants works with both.

Special tokens are never produced by splitting ordinary text: ``"<PAD>"`` inside a text is
encoded as ordinary characters / words / bytes. Only with ``allowed_special=True`` are the
literal strings of the special tokens in the text encoded as their ids.

A tokenizer is saved as ONE JSON file (written atomically: temp file + ``os.replace``)::

    {"format": "glassformer-tokenizer", "version": 1, "kind": "char" | "word" | "bpe" | "hf",
     "special_tokens": {"<PAD>": 0, ...}, ...kind-specific fields...}
"""

from __future__ import annotations

import abc
import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import regex

from ..structured import loads_json
from .fileformat import FORMAT_NAME, FORMAT_VERSION, dumps, validate_special, write_atomic

SPECIAL_TOKENS: tuple[str, ...] = ("<PAD>", "<BOS>", "<EOS>", "<UNK>", "<MASK>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = 0, 1, 2, 3, 4
N_SPECIAL = len(SPECIAL_TOKENS)
DEFAULT_SPECIAL_IDS: dict[str, int] = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}

KINDS: tuple[str, ...] = ("char", "word", "bpe")
_REGISTRY: dict[str, type[Tokenizer]] = {}

T = TypeVar("T", bound="Tokenizer")


class Tokenizer(abc.ABC):
    """Text <-> list of integer ids. Subclasses implement the vocabulary; this class the rest.

    Subclasses implement ``train``, ``_encode_ordinary`` (text without special tokens -> ids),
    ``decode``, ``id_to_token``, ``token_to_id``, ``vocab_size``, ``_state`` / ``_set_state``
    (the kind-specific part of the JSON dict).
    """

    kind: ClassVar[str] = ""
    # the special tokens a saved file of this kind must hold (an "hf" file names its own)
    required_special: ClassVar[tuple[str, ...]] = SPECIAL_TOKENS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            _REGISTRY[cls.kind] = cls

    def __init__(self) -> None:
        self._set_special_tokens(dict(DEFAULT_SPECIAL_IDS))

    # ---- special tokens -------------------------------------------------------------------
    def _set_special_tokens(self, special: dict[str, int]) -> None:
        """Install the special-token table (the five, plus any extras of a loaded vocabulary)."""
        self._special: dict[str, int] = dict(special)
        self._special_by_id: dict[int, str] = {i: s for s, i in special.items()}
        # Longest first, so that a special token that is a prefix of another cannot win.
        alts = sorted(special, key=lambda s: (-len(s), s))
        self._special_re = regex.compile("|".join(regex.escape(s) for s in alts))
        self._special_id_set = frozenset(self._special_by_id)
        self._special_match = self._special  # the strings allowed_special turns into ids

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token string -> id (a copy)."""
        return dict(self._special)

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special_id_set

    @property
    def pad_id(self) -> int:
        return self._role_id("<PAD>")

    @property
    def bos_id(self) -> int:
        return self._role_id("<BOS>")

    @property
    def eos_id(self) -> int:
        return self._role_id("<EOS>")

    @property
    def unk_id(self) -> int:
        return self._role_id("<UNK>")

    @property
    def mask_id(self) -> int:
        return self._role_id("<MASK>")

    def _role_id(self, name: str) -> int:
        """The id of role ``name`` ("<PAD>" ...): the special token of that name (an "hf"
        tokenizer maps the roles onto its own tokens, "[PAD]" ...)."""
        return self._special[name]

    # ---- what subclasses implement ------------------------------------------------------
    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, special tokens included (ids are 0 .. vocab_size - 1)."""

    @property
    def file_vocab_size(self) -> int:
        """The ids a model needs embeddings for: all (an "hf" tokenizer: its file's only)."""
        return self.vocab_size

    @abc.abstractmethod
    def train(self: T, texts: str | Iterable[str], **options: Any) -> T:
        """Learn the vocabulary from ``texts`` in place (replacing any old one); return self."""

    @abc.abstractmethod
    def _encode_ordinary(self, text: str) -> list[int]:
        """Encode text in which nothing is treated as a special token."""

    def _encode_parts(self, parts: list[str]) -> list[list[int]]:
        """``_encode_ordinary`` of each part of one text (the pieces between its special
        tokens); a subclass may share one budget of work across them."""
        return [self._encode_ordinary(part) if part else [] for part in parts]

    @abc.abstractmethod
    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        """Ids -> text. Special tokens become their literal strings, or are dropped."""

    @abc.abstractmethod
    def id_to_token(self, i: int) -> str:
        """The token string of id ``i`` (ValueError when out of range)."""

    @abc.abstractmethod
    def token_to_id(self, s: str) -> int:
        """The id of token string ``s`` (ValueError when it is not in the vocabulary)."""

    @abc.abstractmethod
    def _state(self) -> dict[str, Any]:
        """The kind-specific fields of the JSON dict."""

    @abc.abstractmethod
    def _set_state(self, d: dict[str, Any]) -> None:
        """Restore (and validate) the kind-specific fields written by ``_state``."""

    # ---- encoding -----------------------------------------------------------------------
    def encode(
        self,
        text: str,
        *,
        add_bos: bool = False,
        add_eos: bool = False,
        allowed_special: bool = False,
    ) -> list[int]:
        """Text -> ids, optionally framed by <BOS> ... <EOS>.

        With ``allowed_special=True`` the literal strings of the special tokens in ``text``
        (e.g. ``"<MASK>"``) become their ids; otherwise they are encoded as ordinary text.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids: list[int] = [self.bos_id] if add_bos else []
        if allowed_special:
            parts, specials, start = [], [], 0
            for m in self._special_re.finditer(text):
                parts.append(text[start : m.start()])
                specials.append(self._special_match[m.group()])
                start = m.end()
            parts.append(text[start:])
            for part_ids, special in zip(self._encode_parts(parts), [*specials, None], strict=True):
                ids.extend(part_ids)
                if special is not None:
                    ids.append(special)
        else:
            ids.extend(self._encode_ordinary(text))
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        add_bos: bool = False,
        add_eos: bool = False,
        allowed_special: bool = False,
    ) -> list[list[int]]:
        """``[encode(t, ...) for t in texts]``."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of str, got a single str")
        return [
            self.encode(t, add_bos=add_bos, add_eos=add_eos, allowed_special=allowed_special)
            for t in texts
        ]

    def _check_id(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, int):
            try:
                i = int(i)  # numpy / torch integer scalars
            except (TypeError, ValueError):
                raise TypeError(f"token id must be an int, got {i!r}") from None
        if not 0 <= i < self.vocab_size:
            raise ValueError(f"token id {i} is out of range: allowed 0 .. {self.vocab_size - 1}")
        return i

    def _checked_ids(self, ids: Iterable[int]) -> list[int]:
        """``list(ids)``, after checking every id is an int in 0 .. vocab_size - 1."""
        ids = list(ids)
        if not ids:
            return ids
        try:
            lo, hi = min(ids), max(ids)
        except TypeError:
            lo, hi = -1, -1  # mixed types: the loop below names the culprit
        if lo < 0 or hi >= self.vocab_size or not all(type(i) is int for i in ids):
            ids = [self._check_id(i) for i in ids]
        return ids

    # ---- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict from which ``from_dict`` rebuilds an identical tokenizer."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "special_tokens": dict(self._special),
            **self._state(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Tokenizer:
        """Rebuild a tokenizer from ``to_dict()`` output; on ``Tokenizer`` it dispatches on kind."""
        if not isinstance(d, dict):
            raise ValueError(f"tokenizer data must be a JSON object, got {type(d).__name__}")
        if d.get("format") != FORMAT_NAME:
            raise ValueError(f"format is {d.get('format')!r}: allowed {FORMAT_NAME!r}")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"version is {d.get('version')!r}: allowed {FORMAT_VERSION}")
        kind = d.get("kind")
        if kind not in _REGISTRY:
            loadable = [*KINDS, *(k for k in _REGISTRY if k not in KINDS)]
            raise ValueError(f"kind is {kind!r}: allowed {', '.join(map(repr, loadable))}")
        target = _REGISTRY[kind]
        if cls.kind and cls is not target:
            raise ValueError(
                f"kind is {kind!r}: {cls.__name__}.from_dict allows only {cls.kind!r} "
                f"(use load_tokenizer to accept any kind)"
            )
        tok = target.__new__(target)
        tok._set_special_tokens(validate_special(d.get("special_tokens"), target.required_special))
        tok._set_state(d)
        return tok

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``to_dict()`` as one JSON file, atomically (temp file + os.replace)."""
        write_atomic(path, dumps(self.to_dict()))

    @staticmethod
    def load(path: str | os.PathLike[str]) -> Tokenizer:
        """Read a file written by ``save`` (any kind)."""
        with open(path, "rb") as f:
            d = loads_json(f.read(), f"tokenizer file {str(path)!r}")
        return Tokenizer.from_dict(d)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


def get_tokenizer(kind: str, **kwargs: Any) -> Tokenizer:
    """A new, untrained tokenizer of ``kind`` ("char" | "word" | "bpe"); an "hf" tokenizer is
    read from a Hugging Face file instead (``load_hf_tokenizer``, ``HFTokenizer.from_file``)."""
    if kind not in KINDS:
        raise ValueError(f"kind is {kind!r}: allowed {', '.join(map(repr, KINDS))}")
    return _REGISTRY[kind](**kwargs)


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """Load a tokenizer JSON file of any kind (same as ``Tokenizer.load``)."""
    return Tokenizer.load(path)
