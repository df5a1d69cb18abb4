"""The special tokens of a Hugging Face tokenizer.json: which token plays each of glassformer's
five roles (``role_ids``), and the copy of the file that cannot match a special token's string
in ordinary text (``renamed_specials``). Used by ``hf``."""

from __future__ import annotations

import json
from typing import Any

from .base import SPECIAL_TOKENS

__all__ = ["RESERVED", "USUAL_NAMES", "model_unk", "renamed_specials", "role_ids"]

# ---- special tokens kept out of ordinary text ----------------------------------------------------
RESERVED = "\x00"  # a renamed special piece is RESERVED + its string


def renamed_specials(data: dict[str, Any], specials: set[str]) -> dict[str, Any] | None:
    """A copy of ``data`` whose model vocabulary spells each of ``specials`` as RESERVED +
    the string (with the added tokens and the model's unknown token renamed alike, so that
    every id is unchanged), or None when the vocabulary holds none of them."""
    model = data["model"]
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        hit = specials & set(vocab)
    elif isinstance(vocab, list):
        hit = specials & {p[0] for p in vocab if isinstance(p, list) and p}
    else:
        return None
    if not hit:
        return None

    def name(s: Any) -> Any:
        return RESERVED + s if isinstance(s, str) and s in hit else s

    new = json.loads(json.dumps(data))
    m = new["model"]
    if isinstance(vocab, dict):
        m["vocab"] = {name(k): v for k, v in vocab.items()}
    else:
        m["vocab"] = [[name(p[0]), *p[1:]] for p in vocab]
    if "unk_token" in m:
        m["unk_token"] = name(m["unk_token"])
    if m.get("type") == "BPE" and isinstance(m.get("merges"), list):  # no merge makes a special
        m["merges"] = [
            mg
            for mg in m["merges"]
            if not set(mg if isinstance(mg, list) else str(mg).split(" ", 1)) & hit
            and "".join(mg if isinstance(mg, list) else str(mg).split(" ", 1)) not in hit
        ]
    for t in new.get("added_tokens") or []:
        if isinstance(t, dict):
            t["content"] = name(t.get("content"))
    return new


# ---- the roles ----------------------------------------------------------------------------------
# The usual spellings of each role among a file's special tokens, looked for when the model
# directory's tokenizer_config.json / special_tokens_map.json does not name the role.
USUAL_NAMES: dict[str, tuple[str, ...]] = {
    "<PAD>": ("[PAD]", "<pad>", "<PAD>", "<|pad|>", "<|padding|>"),
    "<BOS>": (
        "[CLS]",
        "<s>",
        "<BOS>",
        "<bos>",
        "<|begin_of_text|>",
        "<|startoftext|>",
        "<|endoftext|>",
    ),
    "<EOS>": ("[SEP]", "</s>", "<EOS>", "<eos>", "<|end_of_text|>", "<|endoftext|>"),
    "<UNK>": ("[UNK]", "<unk>", "<UNK>", "<|unk|>"),
    "<MASK>": ("[MASK]", "<mask>", "<MASK>"),
}


def role_ids(hf: Any, data: dict[str, Any], roles: dict[str, str]) -> dict[str, int | None]:
    """Role -> id: the directory's names first, then the model's unknown token, then the
    usual names among the file's special tokens; None where none is found."""
    special = {t.content: i for i, t in hf.get_added_tokens_decoder().items() if t.special}
    out: dict[str, int | None] = {}
    for name in SPECIAL_TOKENS:
        token = roles.get(name)
        if token is not None:
            i = hf.token_to_id(token)
            if i is None:
                raise ValueError(
                    f"the tokenizer's {name} is {token!r}, which tokenizer.json does not "
                    "contain: allowed a token of its vocabulary"
                )
            out[name] = i
            continue
        out[name] = next((special[s] for s in USUAL_NAMES[name] if s in special), None)
    if roles.get("<UNK>") is None:
        unk = model_unk(hf, data["model"])
        if unk is not None:
            out["<UNK>"] = unk
    if out["<PAD>"] is None:  # Hugging Face's convention for GPT-2 and Llama: pad with <EOS>
        out["<PAD>"] = out["<EOS>"]
    return out


def model_unk(hf: Any, model: dict[str, Any]) -> int | None:
    """The id of the model's own unknown token (``unk_token``, or Unigram's ``unk_id``)."""
    token, unk_id = model.get("unk_token"), model.get("unk_id")
    if isinstance(token, str):
        return hf.token_to_id(token)
    if type(unk_id) is int and 0 <= unk_id < hf.get_vocab_size(with_added_tokens=False):
        return unk_id
    return None
