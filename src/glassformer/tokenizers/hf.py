"""A Hugging Face ``tokenizer.json`` of any kind as a glassformer tokenizer (kind ``"hf"``).

The "Tokenization" part of the notes ("Formal Algorithms for Transformers") for the
vocabularies that pre-trained models ship: byte-level BPE (GPT-2, Llama 3), WordPiece (BERT),
SentencePiece / Unigram (T5, ALBERT) and word-level tables. The Hugging Face ``tokenizers``
library (the optional extra ``glassformer[hf]``) runs the file's own pipeline (normalizer,
pre-tokenizer, model, decoder), so the ids are the library's: ``encode(text)`` equals
``tokenizers.Tokenizer.encode(text, add_special_tokens=False).ids`` with the file's special
tokens read as ordinary text.

Ids keep the file's numbering. The five roles of glassformer (``<PAD> <BOS> <EOS> <UNK>
<MASK>``, see ``base``) are read from the model directory (``hf_roles``): ``pad_token``;
``bos_token``, else ``cls_token``; ``eos_token``, else ``sep_token``; ``unk_token``;
``mask_token``; several roles may share one token (GPT-2's ``<|endoftext|>`` is its
``bos``, ``eos`` and ``unk``). Without a pad token, ``<PAD>`` is the ``<EOS>`` token, as
Hugging Face pads GPT-2 and Llama (padding is masked by the sequence lengths, so the filler
is never read). Any other role the vocabulary lacks is handled as for a BPE vocabulary loaded
from GPT-2 files: it is added under its glassformer name at the lowest id the file leaves
free (GPT-2: ``<MASK>`` = 50257), so ``vocab_size`` counts it.

Special tokens are never produced by splitting ordinary text: ``"[PAD]"`` or ``"<|endoftext|>"``
in a text is encoded as ordinary characters (the library's ``encode_special_tokens``, and the
special tokens' own vocabulary entries renamed in the copy that encodes, so that no model
matches them); only ``allowed_special=True`` turns their literal strings into their ids, and
then the role names too (``"<MASK>"`` as well as BERT's ``"[MASK]"``). The special-token table
holds the file's added tokens marked ``special`` and the five roles.

Saved as one glassformer tokenizer file whose ``"huggingface"`` field is the whole Hugging Face
``tokenizer.json`` object, with ``"roles"`` naming the id of each of the five::

    {"format": "glassformer-tokenizer", "version": 1, "kind": "hf",
     "special_tokens": {"[PAD]": 0, "[UNK]": 100, ...}, "roles": {"<PAD>": 0, ...},
     "huggingface": {"version": "1.0", "model": {"type": "WordPiece", ...}, ...}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import regex

from ..structured import loads_json
from .base import SPECIAL_TOKENS, Tokenizer
from .hf_special import RESERVED, renamed_specials, role_ids

__all__ = ["MODEL_TYPES", "HFTokenizer", "require_tokenizers"]

MODEL_TYPES: tuple[str, ...] = ("BPE", "WordPiece", "Unigram", "WordLevel")
INSTALL_HINT = "pip install 'glassformer[hf]' (or pip install tokenizers)"


def require_tokenizers() -> Any:
    """Import Hugging Face's ``tokenizers`` (an optional dependency) or say how to install it."""
    try:
        import tokenizers
    except ImportError as err:
        raise ImportError(
            f"reading a Hugging Face tokenizer.json needs the optional package 'tokenizers': "
            f"{INSTALL_HINT}"
        ) from err
    return tokenizers


def _library_tokenizer(data: dict[str, Any]) -> Any:
    """The library's tokenizer of a parsed tokenizer.json, set to encode one text as it is:
    special tokens' strings are text, and the file's ``padding`` and ``truncation`` (settings
    for the library's own batches, e.g. sentence-transformers' ``Fixed`` 128) are off, as
    ``transformers`` turns them off per call; glassformer pads each batch itself, and its
    ``max_len`` and ``data.overflow`` decide what a long text becomes."""
    hf = require_tokenizers().Tokenizer.from_str(json.dumps(data))
    hf.encode_special_tokens = True  # "[PAD]" in a text is text, never the special id
    hf.no_padding()
    hf.no_truncation()
    return hf


def _library_error(err: BaseException) -> bool:
    """Whether ``err`` is the library's failure: an ``Exception``, or the ``PanicException``
    (a ``BaseException``) that a panic in its Rust code becomes, e.g. a pre-tokenizer's
    regex past the engine's retry limit; never Ctrl-C or an exit."""
    return isinstance(err, Exception) or type(err).__name__ == "PanicException"


def _reason(err: BaseException) -> str:
    """The first line of the library's message (its panics carry Rust detail below it)."""
    return str(err).splitlines()[0] if str(err) else type(err).__name__


class HFTokenizer(Tokenizer):
    """A Hugging Face ``tokenizers.Tokenizer`` behind glassformer's interface. Build it with
    ``from_file`` / ``from_str`` (or ``load_hf_tokenizer`` for a model directory); it is read,
    not trained."""

    kind = "hf"
    required_special = ()

    def __init__(self, data: dict[str, Any], roles: dict[str, str] | None = None) -> None:
        """``data``: a parsed ``tokenizer.json``; ``roles``: glassformer role (``"<PAD>"``
        ...) -> token string, as ``hf_roles`` reads them from a model directory (a role left
        out is looked for among the file's special tokens by its usual names)."""
        self._install(data, "tokenizer.json")
        self._place_roles(role_ids(self._hf, self._data, roles or {}))

    @classmethod
    def from_str(
        cls, text: str | bytes, roles: dict[str, str] | None = None, where: str = "tokenizer.json"
    ) -> HFTokenizer:
        """Parse the text of a ``tokenizer.json`` (nesting bounded, see ``structured``)."""
        tok = cls.__new__(cls)
        tok._install(loads_json(text, where), where)
        tok._place_roles(role_ids(tok._hf, tok._data, roles or {}))
        return tok

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], roles: dict[str, str] | None = None
    ) -> HFTokenizer:
        """Read a ``tokenizer.json`` file."""
        with open(path, "rb") as f:
            return cls.from_str(f.read(), roles, where=f"tokenizer file {str(path)!r}")

    # ---- set-up ---------------------------------------------------------------------------
    def _install(self, data: Any, where: str) -> None:
        """Check ``data`` is a tokenizer.json of a known model type and build the library's
        tokenizer from it."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} holds {type(data).__name__}: allowed a JSON object")
        model = data.get("model")
        kind = model.get("type") if isinstance(model, dict) else None
        if kind not in MODEL_TYPES:
            raise ValueError(
                f"{where}: model type is {kind!r}: allowed {', '.join(map(repr, MODEL_TYPES))}"
            )
        require_tokenizers()
        try:
            hf = _library_tokenizer(data)
        except BaseException as err:  # the library raises a bare Exception on a malformed file
            if not _library_error(err):
                raise
            reason = _reason(err)
            raise ValueError(f"{where} is not a readable {kind} tokenizer ({reason})") from None
        self._data, self._hf = data, hf
        self._hf_ids = frozenset(hf.get_vocab(with_added_tokens=True).values())
        self._file_ids = 1 + max(self._hf_ids, default=-1)  # read per generated token: kept

    def _place_roles(self, roles: dict[str, int | None]) -> None:
        """Install the special-token table: the file's special tokens, the roles found in the
        vocabulary, and each missing role at the lowest id the vocabulary leaves free."""
        hf = self._hf
        special = {t.content: i for i, t in hf.get_added_tokens_decoder().items() if t.special}
        found: dict[str, int] = {}
        taken = set(self._hf_ids) | set(special.values())
        free = 0
        for name in SPECIAL_TOKENS:
            i = roles.get(name)
            if i is None:
                while free in taken:
                    free += 1
                i = free
                taken.add(i)
                special[name] = i
            else:
                special.setdefault(hf.id_to_token(i), i)
            found[name] = i
        self._roles = found
        self._set_special_tokens(special)
        self._guard_specials()

    def _set_special_tokens(self, special: dict[str, int]) -> None:
        super()._set_special_tokens(special)
        roles = getattr(self, "_roles", None)
        if roles:  # with allowed_special, "<MASK>" is the mask token as "[MASK]" is
            self._special_match = {**roles, **special}
            alts = sorted(self._special_match, key=lambda s: (-len(s), s))
            self._special_re = regex.compile("|".join(regex.escape(s) for s in alts))

    def _guard_specials(self) -> None:
        """The library's tokenizer that encodes ordinary text: the file's, except that the
        special tokens' own entries in the model's vocabulary are renamed to strings no text
        produces (a Unigram or WordPiece model would otherwise match ``"</s>"`` or
        ``"[PAD]"`` in a text as that piece). Ids stay the same."""
        hf_specials = {s for s, i in self._special.items() if i in self._hf_ids}
        guarded = renamed_specials(self._data, hf_specials)
        if guarded is None:
            self._hf_enc = self._hf
            return
        self._hf_enc = _library_tokenizer(guarded)

    def _role_id(self, name: str) -> int:
        return self._roles[name]

    # ---- the vocabulary -----------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return max(self._file_ids, 1 + max(self._special.values()))

    @property
    def file_vocab_size(self) -> int:
        """The ids the Hugging Face file defines (``vocab_size`` less the roles added past
        them): every id that encoding a text can give is below it."""
        return self._file_ids

    @property
    def model_type(self) -> str:
        """The Hugging Face model: ``"BPE"``, ``"WordPiece"``, ``"Unigram"`` or ``"WordLevel"``."""
        return self._data["model"]["type"]

    @property
    def roles(self) -> dict[str, int]:
        """Glassformer role (``"<PAD>"`` ...) -> id (a copy)."""
        return dict(self._roles)

    def to_huggingface(self) -> Any:
        """The library's ``tokenizers.Tokenizer`` of the same file (a fresh copy, with its
        usual settings: special tokens in a text are matched, post-processing applies)."""
        return require_tokenizers().Tokenizer.from_str(json.dumps(self._data))

    def train(self, texts: str | Iterable[str], **options: Any) -> HFTokenizer:
        raise ValueError(
            "an hf tokenizer is read from a Hugging Face tokenizer.json, not trained: "
            "train a 'char', 'word' or 'bpe' tokenizer instead"
        )

    def _encode_ordinary(self, text: str) -> list[int]:
        return self._library_ids([text])[0]

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        add_bos: bool = False,
        add_eos: bool = False,
        allowed_special: bool = False,
    ) -> list[list[int]]:
        """``[encode(t, ...) for t in texts]``; without ``allowed_special``, one call of the
        library's batch encoder, which encodes the texts on all cores."""
        if allowed_special or isinstance(texts, str):
            return super().encode_batch(
                texts, add_bos=add_bos, add_eos=add_eos, allowed_special=allowed_special
            )
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"text must be a str, got {type(t).__name__}")
        head, tail = [self.bos_id] * add_bos, [self.eos_id] * add_eos
        return [head + ids + tail for ids in self._library_ids(texts)]

    def _library_ids(self, texts: list[str]) -> list[list[int]]:
        """The library's ids of each text (special tokens' strings read as text); several texts
        in one batch call (``encode_batch_fast``: no offsets, which nothing here reads)."""
        hf = self._hf_enc
        try:
            if len(texts) == 1:
                found = [hf.encode(texts[0], add_special_tokens=False).ids]
            else:
                batch = getattr(hf, "encode_batch_fast", hf.encode_batch)
                found = [e.ids for e in batch(texts, add_special_tokens=False)]
        except BaseException as err:  # e.g. WordPiece whose unk_token is not in its vocabulary
            if not _library_error(err):
                raise
            if len(texts) > 1:  # name the text that fails
                return [self._library_ids([t])[0] for t in texts]
            raise ValueError(
                f"the {self.model_type} tokenizer cannot encode the text {texts[0][:40]!r} "
                f"({_reason(err)}): allowed a tokenizer.json that the tokenizers library can "
                "apply"
            ) from None
        if hf is not self._hf:
            unk = self._roles["<UNK>"]
            if any((set(ids) & self._special_id_set) - {unk} for ids in found):
                raise ValueError(
                    f"text contains {RESERVED!r} followed by a special token's string: allowed "
                    "a text without that character before a special token"
                )
        return found

    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        """The library's decoding (its decoder joins WordPiece's ``##`` pieces, GPT-2's bytes,
        SentencePiece's ``▁``); a role added outside the file's vocabulary is its literal name,
        or dropped with ``skip_special``."""
        ids = self._checked_ids(ids)
        if skip_special:
            ids = [i for i in ids if i not in self._special_id_set]
        out: list[str] = []
        run: list[int] = []
        for i in ids:
            if i in self._hf_ids:
                run.append(i)
                continue
            if run:
                out.append(self._hf.decode(run, skip_special_tokens=False))
                run = []
            out.append(self._special_by_id.get(i, ""))
        if run:
            out.append(self._hf.decode(run, skip_special_tokens=False))
        return "".join(out)

    def id_to_token(self, i: int) -> str:
        i = self._check_id(i)
        if i in self._hf_ids:
            return self._hf.id_to_token(i)
        return self._special_by_id.get(i, "")

    def token_to_id(self, s: str) -> int:
        i = self._hf.token_to_id(s) if isinstance(s, str) else None
        if i is None:
            i = self._special.get(s)
        if i is None:
            raise ValueError(f"token {s!r} is not in the vocabulary of {self.vocab_size} tokens")
        return i

    # ---- JSON -------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {"roles": dict(self._roles), "huggingface": self._data}

    def _set_state(self, d: dict[str, Any]) -> None:
        special = self._special
        self._install(d.get("huggingface"), "huggingface")
        roles = d.get("roles")
        if not isinstance(roles, dict) or set(roles) != set(SPECIAL_TOKENS):
            raise ValueError(
                f"roles is {roles!r}: allowed a JSON object giving the id of each of "
                f"{', '.join(SPECIAL_TOKENS)}"
            )
        for name, i in roles.items():
            if i not in special.values():
                raise ValueError(f"roles[{name!r}] is {i!r}: allowed an id of special_tokens")
        for s, i in special.items():
            if i in self._hf_ids and self._hf.id_to_token(i) != s:
                raise ValueError(
                    f"special_tokens[{s!r}] is {i}, which the huggingface vocabulary spells "
                    f"{self._hf.id_to_token(i)!r}: allowed the vocabulary's own string"
                )
        self._roles = dict(roles)
        self._set_special_tokens(special)
        self._guard_specials()
