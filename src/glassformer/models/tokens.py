"""The model's tokenizer and text <-> ids at the model: ``to_tokens``, ``to_str_tokens``,
``to_single_token`` ("Formal Algorithms for Transformers", "Tokenization": a text is a
sequence of ids, preceded by <BOS>), named as TransformerLens names them.

``load_model`` and ``from_huggingface_dir`` attach the tokenizer their folder holds; a model
built from a config has none until one is attached (``model.set_tokenizer(tok)``, or
``model.tokenizer = tok``), and these methods say so.

Where TransformerLens's ``HookedTransformer`` / ``TransformerBridge`` behave the same:

* ``prepend_bos=None`` prepends the tokenizer's <BOS> when the tokenizer has one of its own:
  every glassformer tokenizer (its models train on ``<BOS> ids <EOS>``), a Hugging Face one
  that names a ``bos_token`` (GPT-2's ``<|endoftext|>``, as TransformerLens uses it; Llama's
  ``<s>``) or a ``cls_token``, or holds a special token of a usual BOS name (``<s>``,
  ``<|endoftext|>``, ...). A Hugging Face tokenizer with none of these gets none by default:
  its <BOS> role is then an id past the file's vocabulary, which the model never saw (there
  TransformerLens adds ``<|endoftext|>`` to the tokenizer and prepends that new id).
* Several texts are padded to the longest with the tokenizer's <PAD> (GPT-2's and Llama's
  <EOS>, as Hugging Face pads them), on the right or, with ``padding_side="left"``, on the
  left (after the BOS of each row, which stays at the start of its text).
* Literal special tokens in a text (``"<|endoftext|>"``) are read as their ids.
* ``to_str_tokens`` decodes each id on its own (GPT-2: ``" be"``, not ``"Ġbe"``).

Where they differ: a text longer than the model's ``max_len`` is refused (TransformerLens cuts
it to ``n_ctx``); no end token is appended (TransformerLens applies the tokenizer's template,
e.g. BERT's ``[SEP]``); ``to_str_tokens`` of a (B, T) tensor or of several texts gives one
list per row; errors are ``ValueError`` / ``TypeError`` rather than ``AssertionError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["TokenMethods", "drop_undefined_ids", "no_tokenizer_error"]

PADDING_SIDES = ("right", "left")


def no_tokenizer_error(model: Any, what: str) -> ValueError:
    """The error for a call that needs the model's tokenizer when none is attached."""
    return ValueError(
        f"{what}: this {type(model).__name__} has no tokenizer (a model built from a config "
        "has none; glassformer.load_model and from_huggingface_dir attach the one their folder "
        "holds); attach one with model.set_tokenizer(tokenizer) or model.tokenizer = tokenizer"
    )


def drop_undefined_ids(values: Tensor, tokenizer: Any, fill: float = float("-inf")) -> Tensor:
    """``values`` (..., N_V), logits or probabilities over a model's rows, with ``fill`` at
    every id the tokenizer does not define: ``file_vocab_size`` and up, a model's padding
    rows (a vocabulary padded to a round size) and a role added past the file's ids. With
    ``-inf`` on logits no draw, argmax or top-k picks such an id; with ``0.0`` on
    probabilities a top-k list leaves them out while the others keep their values. Unchanged
    without a tokenizer, or when it defines every row."""
    n = None if tokenizer is None else tokenizer.file_vocab_size
    if n is None or n >= values.shape[-1]:
        return values
    out = values.clone()
    out[..., n:] = fill
    return out


class TokenMethods:
    """Text <-> ids with the attached ``tokenizer`` (see the module docstring); mixed into
    every glassformer model."""

    tokenizer: Any

    def set_tokenizer(self, tokenizer: Any) -> Any:
        """Attach ``tokenizer`` (a glassformer tokenizer, or a ``transformers`` fast tokenizer,
        converted to glassformer's HFTokenizer) after checking that the model embeds each of
        its ids; saved with the model by ``save_pretrained``. Returns the model."""
        from ..tokenizers import Tokenizer
        from .checkpoint import check_vocabulary

        if not isinstance(tokenizer, Tokenizer):
            from ..tokenizers.hf_dir import from_transformers_tokenizer

            tokenizer = from_transformers_tokenizer(tokenizer)
        check_vocabulary(tokenizer, self.config)
        self.tokenizer = tokenizer
        return self

    def _require_tokenizer(self, what: str) -> Any:
        tokenizer = getattr(self, "tokenizer", None)
        if tokenizer is None:
            raise no_tokenizer_error(self, what)
        return tokenizer

    @property
    def default_prepend_bos(self) -> bool:
        """Does ``to_tokens`` prepend <BOS> by default? Yes when the tokenizer has a <BOS> of
        its own (an id the model embeds and the tokenizer's file defines; see the module
        docstring)."""
        tok = self._require_tokenizer("default_prepend_bos")
        return tok.bos_id < min(tok.file_vocab_size, self.config.vocab_size)

    def to_tokens(
        self,
        input: str | Sequence[str],
        prepend_bos: bool | None = None,
        padding_side: str = "right",
    ) -> Tensor:
        """Ids (B, T) of a text (B = 1) or of a list of texts, on the model's device:
        <BOS> first when ``prepend_bos`` (None: ``default_prepend_bos``), rows of unequal
        length padded with <PAD> on ``padding_side`` (``"right"`` or ``"left"``)."""
        what = "to_tokens"
        tok = self._require_tokenizer(what)
        texts = [input] if isinstance(input, str) else input
        if not isinstance(texts, list | tuple) or not all(isinstance(t, str) for t in texts):
            raise TypeError(
                f"{what}: input is {type(input).__name__}; allowed a str or a list of str"
            )
        if not texts:
            raise ValueError(f"{what}: input is an empty list; allowed one text or more")
        if padding_side not in PADDING_SIDES:
            raise ValueError(f"{what}: padding_side={padding_side!r}; allowed {PADDING_SIDES}")
        if prepend_bos is None:
            prepend_bos = self.default_prepend_bos
        if not isinstance(prepend_bos, bool):
            raise TypeError(f"{what}: prepend_bos={prepend_bos!r}; allowed True, False or None")
        rows = [tok.encode(t, add_bos=prepend_bos, allowed_special=True) for t in texts]
        self._check_embedded(rows, what)
        longest, max_len = max(len(r) for r in rows), self.config.max_len
        if longest > max_len:
            i = max(range(len(rows)), key=lambda j: len(rows[j]))
            raise ValueError(
                f"{what}: text {i} is {longest} tokens; the model reads at most "
                f"max_len={max_len}: shorten it or split it"
            )
        fill = [[tok.pad_id] * (longest - len(r)) for r in rows]
        if padding_side == "right":
            rows = [r + f for r, f in zip(rows, fill, strict=True)]
        else:
            rows = [f + r for r, f in zip(rows, fill, strict=True)]
        return torch.tensor(rows, dtype=torch.long, device=_device(self))

    def _check_embedded(self, rows: list[list[int]], what: str) -> None:
        """Refuse an id the model has no embedding row for: a special token that the
        tokenizer adds past its file's ids (GPT-2's ``<MASK>``), written in a text."""
        size = self.config.vocab_size
        for n, row in enumerate(rows):
            past = next((i for i in row if i >= size), None)
            if past is not None:
                token = self._require_tokenizer(what).id_to_token(past)
                raise ValueError(
                    f"{what}: text {n} holds {token!r} (id {past}), a token the model has no "
                    f"embedding for: allowed ids 0 .. {size - 1}; leave {token!r} out"
                )

    def to_str_tokens(
        self,
        input: str | Sequence[str] | Sequence[int] | Tensor,
        prepend_bos: bool | None = None,
        padding_side: str = "right",
    ) -> list[str] | list[list[str]]:
        """Each token as its own string (the tokenizer's decoding of that id alone): of a text
        (as ``to_tokens`` reads it), of ids (a list, a (T,) or (1, T) tensor), or one list per
        text or row for a list of texts or a (B, T) tensor."""
        what = "to_str_tokens"
        tok = self._require_tokenizer(what)
        if isinstance(input, str):
            ids = self.to_tokens(input, prepend_bos, padding_side)[0]
        elif isinstance(input, list | tuple) and input and all(isinstance(t, str) for t in input):
            return [self.to_str_tokens(t, prepend_bos, padding_side) for t in input]
        elif isinstance(input, Tensor):
            if input.is_floating_point() or input.dim() > 2:
                raise ValueError(
                    f"{what}: a tensor of dtype {input.dtype} and shape {tuple(input.shape)}; "
                    "allowed integer ids, (T,) or (B, T)"
                )
            if input.dim() == 2 and input.shape[0] != 1:
                return [self.to_str_tokens(row) for row in input]
            ids = input.reshape(-1)
        elif isinstance(input, list | tuple) and all(
            isinstance(i, int) and not isinstance(i, bool) for i in input
        ):
            ids = torch.tensor(list(input), dtype=torch.long)
        else:
            raise TypeError(
                f"{what}: input is {type(input).__name__}; allowed a str, a list of str, a list "
                "of ids or a tensor of ids"
            )
        return [tok.decode([i]) for i in ids.tolist()]

    def to_single_token(self, string: str) -> int:
        """The id of ``string``, which must be exactly one token (no <BOS>): ``" Mary"``."""
        what = "to_single_token"
        tok = self._require_tokenizer(what)
        if not isinstance(string, str):
            raise TypeError(f"{what}: string is {type(string).__name__}; allowed a str")
        ids = tok.encode(string, allowed_special=True)
        if len(ids) != 1:
            pieces = [tok.decode([i]) for i in ids]
            raise ValueError(
                f"{what}: {string!r} is {len(ids)} tokens ({pieces}); allowed a string that "
                "is one token"
            )
        return ids[0]


def _device(model: Any) -> torch.device:
    param = next(model.parameters(), None)
    return torch.device("cpu") if param is None else param.device
