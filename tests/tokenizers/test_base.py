"""The interface shared by every tokenizer: special tokens, framing, save/load, errors.

BPE-specific tests: test_bpe.py; parity with tiktoken / Hugging Face:
test_bpe_reference.py; char and word: test_char_word.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassformer.tokenizers import (
    BOS_ID,
    EOS_ID,
    MASK_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    WordTokenizer,
    get_tokenizer,
    load_tokenizer,
)
from glassformer.tokenizers.word import split_words

CORPUS = [
    "León is the best city in Spain.",
    "The cat sat on the mat, and the dog sat on the log!",
    "Is it 3.14 or 2,718? Nobody knows; ask again: (later).",
]
KINDS = ["char", "word", "bpe"]


def trained(kind: str) -> Tokenizer:
    options = {"bpe": {"vocab_size": 300}}.get(kind, {})
    return get_tokenizer(kind).train(CORPUS, **options)


@pytest.fixture(params=KINDS)
def tok(request: pytest.FixtureRequest) -> Tokenizer:
    return trained(request.param)


def test_special_constants() -> None:
    assert SPECIAL_TOKENS == ("<PAD>", "<BOS>", "<EOS>", "<UNK>", "<MASK>")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID) == (0, 1, 2, 3, 4)


def test_special_ids_fixed(tok: Tokenizer) -> None:
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.special_ids == frozenset(range(5))
    assert [tok.token_to_id(s) for s in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert [tok.id_to_token(i) for i in range(5)] == list(SPECIAL_TOKENS)
    assert tok.kind in KINDS


def test_vocab_size_counts_specials() -> None:
    assert CharTokenizer().vocab_size == 5
    assert WordTokenizer().vocab_size == 5
    assert BPETokenizer().vocab_size == 5 + 256
    chars = set("".join(CORPUS))
    assert trained("char").vocab_size == 5 + len(chars)
    assert trained("bpe").vocab_size == 300
    assert trained("word").vocab_size == 5 + len({w for t in CORPUS for w in split_words(t)})


def test_special_strings_in_text_are_ordinary(tok: Tokenizer) -> None:
    text = "the <PAD> and <MASK> cat<EOS>"
    ids = tok.encode(text)
    # char / word: "<", "PAD", ... were not seen in training, so <UNK>, never <PAD> / <MASK>
    assert not set(ids) & {PAD_ID, BOS_ID, EOS_ID, MASK_ID}
    if tok.kind == "bpe":  # bytes: no special id at all, and lossless
        assert not set(ids) & tok.special_ids
        assert tok.decode(ids) == text
    allowed = tok.encode(text, allowed_special=True)
    assert allowed.count(PAD_ID) == 1 and allowed.count(MASK_ID) == 1
    assert allowed.count(EOS_ID) == 1 and allowed[-1] == EOS_ID
    assert allowed == [
        *tok.encode("the "),
        PAD_ID,
        *tok.encode(" and "),
        MASK_ID,
        *tok.encode(" cat"),
        EOS_ID,
    ]


def test_char_special_strings_seen_in_training_are_ordinary_chars() -> None:
    tok = CharTokenizer().train("<PAD>")  # "<", "P", "A", "D", ">" are now ordinary chars
    assert tok.encode("<PAD>") == [tok.token_to_id(c) for c in "<PAD>"]
    # code-point order: "<" 60, ">" 62, "A" 65, "D" 68, "P" 80 -> ids 5, 6, 7, 8, 9
    assert tok.encode("<PAD>") == [5, 9, 7, 8, 6]
    assert tok.encode("<PAD>", allowed_special=True) == [PAD_ID]
    assert tok.decode(tok.encode("<PAD>")) == "<PAD>"


def test_bos_eos_framing_and_skip_special(tok: Tokenizer) -> None:
    body = tok.encode("the cat sat")
    ids = tok.encode("the cat sat", add_bos=True, add_eos=True)
    assert ids == [BOS_ID, *body, EOS_ID]
    assert tok.decode(ids, skip_special=True) == tok.decode(body)
    framed = tok.decode(ids)
    assert framed.startswith("<BOS>") and framed.endswith("<EOS>")
    assert tok.decode([PAD_ID, MASK_ID, *body, PAD_ID], skip_special=True) == tok.decode(body)


def test_encode_batch(tok: Tokenizer) -> None:
    texts = ["the cat", "", "sat on the mat."]
    got = tok.encode_batch(texts, add_bos=True, add_eos=True)
    assert got == [tok.encode(t, add_bos=True, add_eos=True) for t in texts]
    assert got[1] == [BOS_ID, EOS_ID]
    with pytest.raises(TypeError, match="texts"):
        tok.encode_batch("the cat")  # type: ignore[arg-type]


def test_empty_text(tok: Tokenizer) -> None:
    assert tok.encode("") == []
    assert tok.decode([]) == ""


def test_save_load_identical(tok: Tokenizer, tmp_path: Path) -> None:
    path = tmp_path / "tok.json"
    tok.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["tok.json"]  # no temp file left behind
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["kind"] == tok.kind
    assert data["special_tokens"] == {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    back = load_tokenizer(path)
    assert type(back) is type(tok)
    assert back.to_dict() == tok.to_dict()
    assert back.vocab_size == tok.vocab_size
    text = "the <MASK> sat, León; 3.14 knows!"
    for kw in ({}, {"allowed_special": True, "add_bos": True}):
        assert back.encode(text, **kw) == tok.encode(text, **kw)
    assert Tokenizer.load(path).to_dict() == tok.to_dict()
    assert type(tok).from_dict(tok.to_dict()).to_dict() == tok.to_dict()
    tok.save(path)  # overwrite in place
    assert load_tokenizer(path).to_dict() == tok.to_dict()


def test_get_tokenizer_kinds() -> None:
    assert type(get_tokenizer("char")) is CharTokenizer
    assert type(get_tokenizer("word")) is WordTokenizer
    assert type(get_tokenizer("bpe", pattern="cl100k")) is BPETokenizer
    with pytest.raises(ValueError, match=r"kind is 'sentencepiece': allowed 'char', 'word', 'bpe'"):
        get_tokenizer("sentencepiece")


def test_decode_rejects_out_of_range(tok: Tokenizer) -> None:
    n = tok.vocab_size
    with pytest.raises(ValueError, match=rf"token id {n} is out of range: allowed 0 .. {n - 1}"):
        tok.decode([5, n])
    with pytest.raises(ValueError, match=r"token id -1 is out of range"):
        tok.decode([-1])
    with pytest.raises(ValueError, match=r"token id -1 is out of range"):
        tok.id_to_token(-1)
    with pytest.raises(ValueError, match=r"token 'qq zz' is not in the vocabulary"):
        tok.token_to_id("qq zz")


def test_train_replaces_vocabulary(tok: Tokenizer) -> None:
    options = {"vocab_size": 270} if tok.kind == "bpe" else {}
    before = tok.vocab_size
    assert tok.train("zz zz", **options) is tok
    assert tok.vocab_size < before
    assert tok.decode(tok.encode("zz zz")) == "zz zz"


def test_train_accepts_a_generator(tok: Tokenizer) -> None:
    options = {"vocab_size": 300} if tok.kind == "bpe" else {}
    fresh = get_tokenizer(tok.kind).train((t for t in CORPUS), **options)
    assert fresh.to_dict() == tok.to_dict()


# ---- bad JSON files -----------------------------------------------------------------------
def _write(tmp_path: Path, d: dict) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def test_load_wrong_kind(tmp_path: Path) -> None:
    d = trained("char").to_dict()
    with pytest.raises(ValueError, match=r"kind is 'char': WordTokenizer.from_dict allows only"):
        WordTokenizer.from_dict(d)
    d["kind"] = "unigram"
    with pytest.raises(ValueError, match=r"kind is 'unigram': allowed 'char', 'word', 'bpe', 'hf'"):
        load_tokenizer(_write(tmp_path, d))
    with pytest.raises(ValueError, match=r"format is None: allowed 'glassformer-tokenizer'"):
        load_tokenizer(_write(tmp_path, {"kind": "char"}))
    (tmp_path / "x.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer file .* is not valid JSON"):
        load_tokenizer(tmp_path / "x.json")


@pytest.mark.parametrize("kind", ["char", "word"])
def test_load_duplicate_or_missing_ids(kind: str, tmp_path: Path) -> None:
    d = trained(kind).to_dict()
    first, second = list(d["vocab"])[:2]
    dup = json.loads(json.dumps(d))
    dup["vocab"][second] = dup["vocab"][first]
    with pytest.raises(ValueError, match=rf"{kind} vocab has duplicate ids \[5\]: each id once"):
        load_tokenizer(_write(tmp_path, dup))
    gap = json.loads(json.dumps(d))
    del gap["vocab"][first]
    with pytest.raises(ValueError, match=rf"{kind} vocab is missing ids \[5\]: allowed exactly"):
        load_tokenizer(_write(tmp_path, gap))
    clash = json.loads(json.dumps(d))
    clash["vocab"][first] = 0
    with pytest.raises(ValueError, match=r"duplicate ids \[0\]"):
        load_tokenizer(_write(tmp_path, clash))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["vocab", "special"])
def test_a_huge_id_is_refused_without_allocating_for_it(kind: str, where: str, tmp_path: Path):
    """An id of 10**12 in tokenizer.json: a ValueError naming the id and what is allowed,
    found with memory in proportion to the number of ids, not to the largest one."""
    d = trained(kind).to_dict()
    n = trained(kind).vocab_size
    if where == "special":
        d["special_tokens"]["<MASK>"] = 10**12
        gap = MASK_ID
    elif kind == "bpe":
        d["merges"][-1][2] = 10**12
        gap = n - 1
    else:
        last = max(d["vocab"], key=d["vocab"].get)
        d["vocab"][last] = 10**12
        gap = n - 1
    with pytest.raises(ValueError) as err:
        load_tokenizer(_write(tmp_path, d))
    assert str(err.value) == (
        f"{kind} vocab is missing ids [{gap}]: allowed exactly 0 .. {n - 1} for {n} tokens, "
        "but it gives id 1000000000000"
    )


def test_load_bad_special_tokens(tmp_path: Path) -> None:
    d = trained("char").to_dict()
    d["special_tokens"].pop("<MASK>")
    with pytest.raises(ValueError, match=r"special_tokens lacks \['<MASK>'\]: allowed a table"):
        load_tokenizer(_write(tmp_path, d))
    d["special_tokens"]["<MASK>"] = 0
    with pytest.raises(ValueError, match=r"gives id 0 to both '<PAD>' and '<MASK>'"):
        load_tokenizer(_write(tmp_path, d))


def test_load_bad_bpe(tmp_path: Path) -> None:
    d = trained("bpe").to_dict()
    dup = json.loads(json.dumps(d))
    dup["merges"][1][2] = dup["merges"][0][2]
    with pytest.raises(ValueError, match=r"bpe vocab has duplicate ids \[261\]"):
        load_tokenizer(_write(tmp_path, dup))
    gap = json.loads(json.dumps(d))
    gap["merges"].pop(0)
    with pytest.raises(ValueError, match=r"bpe vocab is missing ids \[261\]"):
        load_tokenizer(_write(tmp_path, gap))
    early = json.loads(json.dumps(d))
    early["merges"][0][0] = 299
    with pytest.raises(ValueError, match=r"merges\[0\] = \[299, .*neither a byte nor"):
        load_tokenizer(_write(tmp_path, early))
    named = json.loads(json.dumps(d))
    named["pattern_name"] = "cl100k"
    with pytest.raises(ValueError, match=r"pattern_name is 'cl100k' but pattern differs"):
        load_tokenizer(_write(tmp_path, named))


def test_pickle_and_tensor_ids(tok: Tokenizer) -> None:
    """Data-loader workers pickle the tokenizer; models hand back tensors of ids."""
    import pickle

    import torch

    text = "the cat sat on the mat."
    ids = tok.encode(text, add_bos=True)
    back = pickle.loads(pickle.dumps(tok))
    assert back.encode(text, add_bos=True) == ids
    assert back.to_dict() == tok.to_dict()
    assert tok.decode(torch.tensor(ids)) == tok.decode(ids)
    assert tok.decode(torch.tensor(ids), skip_special=True) == tok.decode(ids[1:])
