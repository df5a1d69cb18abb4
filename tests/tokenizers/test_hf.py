"""HFTokenizer (kind "hf") against Hugging Face `tokenizers` on the same tokenizer.json:
WordPiece, Unigram and byte-level BPE files trained here, offline, on a few sentences.

The ids must be IDENTICAL to the library's (``encode(text, add_special_tokens=False)``) on
text without special-token strings; a special token's string in a text is ordinary text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from glassformer.tokenizers import HFTokenizer, load_hf_tokenizer, load_tokenizer

SENTENCES = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The café was naïve about crème brûlée and Ångström.",
    "Emoji 😀 and 👍🏽 with 日本語のテキスト and 中文字符\n\nand   spaces\tand tabs.",
] * 4
HARD = [
    "Héllo wörld, naïve café — crème brûlée!",
    "emoji 😀👍🏽🇪🇸 ❤️ 👨‍👩‍👧",
    "CJK 日本語のテキスト 你好世界",
    "whitespace   runs\t\ttabs\n\n\nnewlines \r\n end   ",
    "  leading and trailing  ",
    "e\u0301te\u0301 and \u00a0 nbsp",
    "",
]
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece() -> Tokenizer:
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.decoder = decoders.WordPiece()
    t.train_from_iterator(
        SENTENCES, trainers.WordPieceTrainer(vocab_size=300, special_tokens=WORDPIECE_SPECIALS)
    )
    return t


def wordpiece_whitespace() -> Tokenizer:
    """WordPiece split on whitespace only: "[PAD]" in a text is one word, in the vocabulary."""
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.decoder = decoders.WordPiece()
    t.train_from_iterator(
        SENTENCES, trainers.WordPieceTrainer(vocab_size=300, special_tokens=WORDPIECE_SPECIALS)
    )
    return t


def unigram() -> Tokenizer:
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.NFKC()
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    t.decoder = decoders.Metaspace()
    t.train_from_iterator(
        [*SENTENCES, "<pad> <s> </s> <unk> [] <>"],
        trainers.UnigramTrainer(
            vocab_size=150, special_tokens=["<pad>", "<s>", "</s>", "<unk>"], unk_token="<unk>"
        ),
    )
    return t


def byte_bpe() -> Tokenizer:
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(
        SENTENCES,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return t


KINDS = {"wordpiece": wordpiece, "unigram": unigram, "byte_bpe": byte_bpe}


@pytest.fixture(scope="module", params=list(KINDS))
def pair(request) -> tuple[Tokenizer, HFTokenizer]:
    ref = KINDS[request.param]()
    return ref, HFTokenizer.from_str(ref.to_str())


def test_ids_equal_the_library_on_hard_text(pair):
    ref, tok = pair
    for text in [*HARD, *SENTENCES[:4]]:
        assert tok.encode(text) == ref.encode(text, add_special_tokens=False).ids, text
    batch = tok.encode_batch(HARD, add_bos=True, add_eos=True)
    assert batch[0][0] == tok.bos_id and batch[0][-1] == tok.eos_id
    assert batch[0][1:-1] == ref.encode(HARD[0], add_special_tokens=False).ids


def test_decode_is_the_librarys(pair):
    ref, tok = pair
    for text in HARD:
        ids = tok.encode(text)
        assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False)


def test_byte_level_bpe_is_lossless():
    tok = HFTokenizer.from_str(byte_bpe().to_str())
    for text in HARD:
        assert tok.decode(tok.encode(text)) == text


def test_wordpiece_specials_map_onto_the_roles():
    ref = wordpiece()
    tok = HFTokenizer.from_str(ref.to_str())
    ids = {s: tok.token_to_id(s) for s in WORDPIECE_SPECIALS}
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, tok.mask_id) == (
        ids["[PAD]"],
        ids["[CLS]"],
        ids["[SEP]"],
        ids["[UNK]"],
        ids["[MASK]"],
    )
    assert tok.special_tokens == ids
    assert tok.vocab_size == ref.get_vocab_size()


def test_unigram_roles_and_a_missing_mask_at_the_first_free_id():
    ref = unigram()
    tok = HFTokenizer.from_str(ref.to_str())
    n = ref.get_vocab_size()
    assert tok.roles == {
        "<PAD>": ref.token_to_id("<pad>"),
        "<BOS>": ref.token_to_id("<s>"),
        "<EOS>": ref.token_to_id("</s>"),
        "<UNK>": ref.token_to_id("<unk>"),
        "<MASK>": n,  # Unigram files of SentencePiece have no mask: added after the vocabulary
    }
    assert tok.vocab_size == n + 1
    assert tok.id_to_token(n) == "<MASK>" and tok.token_to_id("<MASK>") == n
    be = tok.encode("to be")
    assert tok.decode([*be, n]) == ref.decode(be) + "<MASK>" == "to be<MASK>"
    assert tok.decode([n, *be, n], skip_special=True) == "to be"


def test_byte_level_bpe_roles_like_gpt2():
    """GPT-2's layout: <|endoftext|> is bos, eos and unk (named by tokenizer_config.json);
    without a pad token <PAD> is <EOS>, as Hugging Face pads GPT-2; <MASK> takes the first
    id after the vocabulary."""
    ref = byte_bpe()
    n = ref.get_vocab_size()
    eot = ref.token_to_id("<|endoftext|>")
    roles = {"<BOS>": "<|endoftext|>", "<EOS>": "<|endoftext|>", "<UNK>": "<|endoftext|>"}
    tok = HFTokenizer.from_str(ref.to_str(), roles)
    assert tok.roles == {"<PAD>": eot, "<BOS>": eot, "<EOS>": eot, "<UNK>": eot, "<MASK>": n}
    assert tok.special_tokens == {"<|endoftext|>": eot, "<MASK>": n}
    assert (tok.vocab_size, tok.file_vocab_size) == (n + 1, n)
    # a file that names no role at all: the usual names among its special tokens
    bare = HFTokenizer.from_str(ref.to_str())
    expected = {"<PAD>": eot, "<BOS>": eot, "<EOS>": eot, "<UNK>": n, "<MASK>": n + 1}
    assert bare.roles == expected


@pytest.mark.parametrize("make", [wordpiece, wordpiece_whitespace, unigram, byte_bpe])
def test_special_strings_in_text_are_ordinary_text(make):
    ref = make()
    tok = HFTokenizer.from_str(ref.to_str())
    unk = tok.unk_id
    for text in ["[PAD] [CLS] x [SEP] [MASK] [UNK]", "<pad> <s> y </s> <unk>", "<|endoftext|>",
                 "<PAD> <BOS> <EOS> <MASK>", "a[PAD]b</s>c"]:  # fmt: skip
        ids = tok.encode(text)
        assert not set(ids) & (tok.special_ids - {unk}), (text, ids)
        # the library itself, as usually called, makes them specials: the guard is needed
    lib = ref.encode("[PAD] <pad> <|endoftext|>", add_special_tokens=False).ids
    assert set(lib) & (tok.special_ids - {unk})
    # only allowed_special turns them into their ids
    pad_string = tok.id_to_token(tok.pad_id)
    assert tok.encode(f"x{pad_string}", allowed_special=True)[-1] == tok.pad_id
    # and the role names too: "<MASK>" is BERT's [MASK]
    assert tok.encode("x<MASK><PAD>", allowed_special=True)[-2:] == [tok.mask_id, tok.pad_id]


def test_whitespace_wordpiece_never_matches_a_special_word():
    """With whitespace-only splitting, the library's model would match the word "[PAD]" as the
    vocabulary entry; glassformer encodes it as pieces or <UNK>, never as [PAD]."""
    ref = wordpiece_whitespace()
    tok = HFTokenizer.from_str(ref.to_str())
    ref.encode_special_tokens = True
    assert ref.encode("[PAD]", add_special_tokens=False).ids == [ref.token_to_id("[PAD]")]
    assert tok.pad_id not in tok.encode("[PAD]")
    assert tok.encode("the question") == ref.encode("the question", add_special_tokens=False).ids


@pytest.mark.parametrize("make", [wordpiece, unigram, byte_bpe])
def test_save_load_round_trip(make, tmp_path):
    tok = HFTokenizer.from_str(make().to_str())
    tok.save(tmp_path / "tokenizer.json")
    back = load_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(back, HFTokenizer)
    saved = json.loads((tmp_path / "tokenizer.json").read_text())
    assert saved["kind"] == "hf" and saved["huggingface"]["model"]["type"] == tok.model_type
    assert back.roles == tok.roles and back.special_tokens == tok.special_tokens
    assert back.vocab_size == tok.vocab_size
    for text in HARD:
        assert back.encode(text) == tok.encode(text)
    assert back.encode("[PAD] <pad>") == tok.encode("[PAD] <pad>")


def test_model_directory_tokenizer(tmp_path):
    """load_hf_tokenizer reads tokenizer.json with the roles of tokenizer_config.json (an
    AddedToken object or a string), preferring it to vocab.json + merges.txt."""
    ref = byte_bpe()
    ref.save(str(tmp_path / "tokenizer.json"))
    config = {"bos_token": {"content": "<|endoftext|>"}, "eos_token": "<|endoftext|>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, "pad_token": None}))
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"unk_token": "<|endoftext|>"}))
    (tmp_path / "vocab.json").write_text("not read")
    (tmp_path / "merges.txt").write_text("not read")
    tok = load_hf_tokenizer(tmp_path)
    eot = ref.token_to_id("<|endoftext|>")
    assert isinstance(tok, HFTokenizer)
    assert (tok.bos_id, tok.eos_id, tok.unk_id) == (eot, eot, eot)
    assert tok.encode(HARD[1]) == ref.encode(HARD[1], add_special_tokens=False).ids
    assert load_hf_tokenizer(tmp_path / "missing") is None


def test_model_directory_with_gpt2_files_only(tmp_path):
    from glassformer.tokenizers import BPETokenizer

    BPETokenizer().train(SENTENCES, vocab_size=280).save_gpt2_files(tmp_path)
    assert isinstance(load_hf_tokenizer(tmp_path), BPETokenizer)


def one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_bad_tokenizer_files_are_refused_in_one_line(tmp_path):
    good = json.loads(wordpiece().to_str())
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str("{not json")
    assert "not valid JSON" in one_line(err)
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str(json.dumps({**good, "model": {**good["model"], "type": "Magic"}}))
    assert "model type is 'Magic'" in one_line(err) and "'WordPiece'" in one_line(err)
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str("[" * 100_000 + "]" * 100_000)
    assert "nested" in one_line(err) or "deep" in one_line(err)
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str(json.dumps({**good, "model": {"type": "WordPiece", "vocab": 3}}))
    assert "not a readable WordPiece tokenizer" in one_line(err)
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str(json.dumps([1, 2]))
    assert "allowed a JSON object" in one_line(err)
    with pytest.raises(ValueError) as err:
        HFTokenizer.from_str(json.dumps(good), {"<PAD>": "[NOPE]"})
    assert "'[NOPE]'" in one_line(err)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(good))
    (tmp_path / "tokenizer_config.json").write_text('{"pad_token": 7}')
    with pytest.raises(ValueError) as err:
        load_hf_tokenizer(tmp_path)
    assert "pad_token is 7" in one_line(err)


def test_bad_saved_hf_files_are_refused(tmp_path):
    tok = HFTokenizer.from_str(wordpiece().to_str())
    d = tok.to_dict()
    for broken, words in [
        ({**d, "roles": {"<PAD>": 0}}, "roles is"),
        ({**d, "roles": {**d["roles"], "<PAD>": 12345}}, "roles['<PAD>'] is 12345"),
        (
            {
                **d,
                "special_tokens": {
                    "[XX]" if s == "[PAD]" else s: i for s, i in d["special_tokens"].items()
                },
            },
            "spells '[PAD]'",
        ),
        ({**d, "huggingface": "x"}, "allowed a JSON object"),
    ]:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(broken))
        with pytest.raises(ValueError) as err:
            load_tokenizer(path)
        assert words in one_line(err)


def test_an_hf_tokenizer_is_not_trained():
    from glassformer.tokenizers import get_tokenizer

    with pytest.raises(ValueError, match="kind is 'hf'"):
        get_tokenizer("hf")
    tok = HFTokenizer.from_str(wordpiece().to_str())
    with pytest.raises(ValueError, match="not trained"):
        tok.train(["x"])


def test_read_from_a_file(tmp_path: Path):
    ref = unigram()
    ref.save(str(tmp_path / "tokenizer.json"))
    tok = HFTokenizer.from_file(tmp_path / "tokenizer.json")
    assert tok.encode(HARD[2]) == ref.encode(HARD[2], add_special_tokens=False).ids


def test_a_text_the_library_cannot_encode_is_a_value_error():
    """A WordPiece file whose unk_token is missing from its vocabulary fails on an unknown
    word inside the library: one-line ValueError, not the library's bare Exception."""
    t = Tokenizer(models.WordPiece({"a": 0, "b": 1}, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = HFTokenizer.from_str(t.to_str())
    assert tok.encode("a b a") == [0, 1, 0]
    with pytest.raises(ValueError) as err:
        tok.encode("a zzz")
    assert "cannot encode the text 'a zzz'" in one_line(err) and "[UNK]" in one_line(err)


def test_nul_before_a_special_string_is_refused():
    """The encoding copy spells a special entry as NUL + its string: a text holding exactly
    that would match it, and is refused rather than encoded as the special token."""
    tok = HFTokenizer.from_str(unigram().to_str())
    with pytest.raises(ValueError) as err:
        tok.encode("\x00<pad>")
    assert "followed by a special token's string" in one_line(err)
    assert tok.pad_id not in tok.encode("x\x00y <pad>")


def test_without_the_tokenizers_package_the_error_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match=r"glassformer\[hf\]"):
        HFTokenizer.from_str(json.dumps({"model": {"type": "WordLevel", "vocab": {}}}))


@pytest.mark.parametrize("padding, truncation", [(True, False), (False, True), (True, True)])
def test_the_files_padding_and_truncation_are_off(padding, truncation):
    """A tokenizer.json that sets padding (sentence-transformers ship ``Fixed`` 128) or
    truncation (``max_length`` 128): one text is encoded whole and unpadded, as the library
    does with both settings off; glassformer pads batches and cuts texts by its own rules."""
    t = wordpiece()
    if padding:
        t.enable_padding(pad_id=0, pad_token="[PAD]", length=128)
    if truncation:
        t.enable_truncation(max_length=8)
    tok = HFTokenizer.from_str(t.to_str())
    text = " ".join(SENTENCES[:4])
    t.no_padding()
    t.no_truncation()
    want = t.encode(text, add_special_tokens=False).ids
    assert len(want) == 51
    assert tok.encode(text) == want
    assert tok.encode("to be") == t.encode("to be", add_special_tokens=False).ids
    assert len(tok.encode("to be")) == 2
    saved = tok.to_dict()["huggingface"]  # the file is kept as read
    assert (saved["padding"] is not None, saved["truncation"] is not None) == (padding, truncation)


def test_a_regex_past_the_engines_retry_limit_is_a_value_error():
    """A pre-tokenizer regex that backtracks past the regex engine's retry limit makes the
    library panic (``PanicException``, a ``BaseException``): one-line ValueError."""
    t = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"(\w+\s?)+$"), "isolated")
    tok = HFTokenizer.from_str(t.to_str())
    with pytest.raises(ValueError) as err:
        tok.encode("a" * 30 + "!")
    assert "cannot encode the text 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'" in one_line(err)
    assert "retry-limit-in-match" in one_line(err)


def test_a_batch_is_one_call_of_the_librarys_batch_encoder_with_the_ids_of_each_text(pair):
    ref, tok = pair
    texts = [*HARD, *SENTENCES[:4], "[PAD] <pad> <|endoftext|> <MASK> [MASK]"]
    calls = []

    class Counted:  # the library's tokenizer, its batch calls counted
        def __init__(self, hf):
            self.hf = hf

        def __getattr__(self, name):
            found = getattr(self.hf, name)
            if not name.startswith("encode_batch"):
                return found
            return lambda *args, **kw: calls.append(name) or found(*args, **kw)

    counted = HFTokenizer.from_str(ref.to_str())
    counted._hf_enc = Counted(counted._hf_enc)
    assert counted.encode_batch(texts) == [tok.encode(t) for t in texts]
    assert calls == ["encode_batch_fast"]
    special = tok.encode_batch(texts, allowed_special=True)
    assert special == [tok.encode(t, allowed_special=True) for t in texts]


def test_a_text_the_library_cannot_encode_in_a_batch_is_named():
    t = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"(\w+\s?)+$"), "isolated")
    tok = HFTokenizer.from_str(t.to_str())
    with pytest.raises(ValueError) as err:
        tok.encode_batch(["a", "a" * 30 + "!", "a"])
    assert "cannot encode the text 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'" in one_line(err)
