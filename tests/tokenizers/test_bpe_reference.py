"""BPETokenizer against tiktoken and Hugging Face `tokenizers` given the same merges, and the
GPT-2 / tiktoken file formats.

Both peers implement the same encoding rule (per pre-tokenised piece, merge the adjacent pair of
lowest rank, leftmost first) and are given the same pre-tokenisation regex, so the ids must be
IDENTICAL, not just close.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.tokenizers import BPETokenizer, load_tokenizer
from glassformer.tokenizers.bpe_io import bytes_to_unicode

tiktoken = pytest.importorskip("tiktoken")
hf = pytest.importorskip("tokenizers")


def varied_text(seed: int, n_tokens: int) -> str:
    """English-like words, digits, punctuation, contractions, whitespace runs, accents, emoji
    and Chinese, from a seeded generator."""
    rng = random.Random(seed)
    syllables = ["th", "e", "an", "in", "er", "re", "on", "at", "ou", "st", "ing", "ed", "qu",
                 "a", "o", "s", "t", "l", "m", "ck", "zz", "y", "ly", "ion"]  # fmt: skip
    foreign = ["café", "naïve", "León", "Ångström", "crème", "über", "façade", "niño", "Ελλάδα",
               "Москва", "e\u0301te\u0301", "ǅemal"]  # fmt: skip
    emoji = ["😀", "👍🏽", "🇪🇸", "❤️", "🚀", "👨‍👩‍👧", "🤖🤖"]
    chinese = ["中文", "字符", "你好世界", "分词器", "的", "。", "，"]
    punct = [",", ".", "!", "?", ";", ":", "...", "—", "(", ")", '"', "'s", "'t", "'re", "'ll",
             "n't", "-", "/", "$", "%", "#", "@", "&", "'S", "<PAD>", "<|x|>"]  # fmt: skip
    spaces = [" "] * 40 + ["  ", "\t", "\n", "\n\n", "   ", "\r\n", " \n", "\u00a0", ""] * 2
    out = []
    for _ in range(n_tokens):
        r = rng.random()
        if r < 0.62:
            w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
            w = w.capitalize() if rng.random() < 0.15 else w.upper() if rng.random() < 0.02 else w
        elif r < 0.72:
            w = str(rng.choice([rng.randint(0, 99), rng.randint(0, 10**7), rng.random() * 100]))
        elif r < 0.80:
            w = rng.choice(foreign)
        elif r < 0.84:
            w = rng.choice(emoji)
        elif r < 0.88:
            w = "".join(rng.choice(chinese) for _ in range(rng.randint(1, 3)))
        else:
            w = rng.choice(punct)
        out.append(w)
        out.append(rng.choice(spaces))
    return "".join(out)


TRAIN = varied_text(seed=1, n_tokens=12_000)
TEST = varied_text(seed=2, n_tokens=4_000)
PATTERN_NAMES = ["gpt2", "cl100k"]


@pytest.fixture(scope="module", params=PATTERN_NAMES)
def tok(request: pytest.FixtureRequest) -> BPETokenizer:
    return BPETokenizer(request.param).train(TRAIN, vocab_size=1200)


def to_tiktoken(tok: BPETokenizer):  # -> tiktoken.Encoding
    return tiktoken.Encoding(
        name=f"glassformer-{tok.pattern_name}",
        pat_str=tok.pattern,
        mergeable_ranks=tok.export_tiktoken_ranks(),
        special_tokens=tok.special_tokens,
    )


def to_hf(tok: BPETokenizer, directory: Path):  # -> tokenizers.Tokenizer
    """Hugging Face BPE on the files written by save_gpt2_files. GPT-2's regex is built into
    the ByteLevel pre-tokenizer; cl100k's is given to a Split pre-tokenizer in front of it."""
    from tokenizers import Regex, decoders, models, pre_tokenizers

    vocab, merges = tok.save_gpt2_files(directory)
    t = hf.Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    if tok.pattern_name == "gpt2":
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(tok.pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])  # fmt: skip
    t.decoder = decoders.ByteLevel()
    return t


def test_training_learned_the_full_vocabulary(tok: BPETokenizer) -> None:
    assert tok.vocab_size == 1200
    assert len(tok.merges) == 1200 - 261
    ids = tok.encode(TEST)
    assert len(ids) < 0.5 * len(TEST.encode("utf-8"))  # it compresses
    assert tok.decode(ids) == TEST


def test_equals_tiktoken(tok: BPETokenizer) -> None:
    enc = to_tiktoken(tok)
    ids = tok.encode(TEST)
    assert enc.encode_ordinary(TEST) == ids
    assert enc.encode(TEST, disallowed_special=()) == ids  # "<PAD>" in TEST stays ordinary
    with_special = tok.encode(TEST, allowed_special=True)
    assert 0 in with_special
    assert enc.encode(TEST, allowed_special="all") == with_special
    assert enc.decode(ids) == tok.decode(ids) == TEST


@pytest.fixture(scope="module")
def enc(tok: BPETokenizer):  # -> tiktoken.Encoding
    return to_tiktoken(tok)


# Code points unassigned in Python's Unicode database (category Cn) are left out: the `regex`
# module and tiktoken's Rust regex ship different Unicode versions and disagree on some of them
# (U+3E44D is \p{Lo} to regex 2026.11 and unassigned to tiktoken 0.14), which changes the
# pre-tokenisation, not the BPE. Every assigned character, emoji and control is included.
ASSIGNED_TEXT = st.text(st.characters(exclude_categories=("Cs", "Cn")))


@settings(max_examples=200, deadline=None)
@given(ASSIGNED_TEXT)
def test_equals_tiktoken_on_any_text(tok: BPETokenizer, enc, s: str) -> None:
    assert enc.encode_ordinary(s) == tok.encode(s)


def test_equals_hugging_face(tok: BPETokenizer, tmp_path: Path) -> None:
    t = to_hf(tok, tmp_path)
    ids = tok.encode(TEST)
    assert t.encode(TEST).ids == ids
    assert t.decode(ids) == TEST
    assert t.get_vocab_size() == tok.vocab_size
    assert [t.id_to_token(i) for i in (0, 4, 5 + 32, 400)] == [
        tok.id_to_token(i) for i in (0, 4, 5 + 32, 400)
    ]


@pytest.fixture(scope="module")
def hf_tok(tok: BPETokenizer, tmp_path_factory: pytest.TempPathFactory):
    return to_hf(tok, tmp_path_factory.mktemp("hf"))


@settings(max_examples=200, deadline=None)
@given(ASSIGNED_TEXT)
def test_equals_hugging_face_on_any_text(tok: BPETokenizer, hf_tok, s: str) -> None:
    assert hf_tok.encode(s).ids == tok.encode(s)


def test_hf_trainer_learns_a_comparable_vocabulary(tmp_path: Path) -> None:
    """HF's trainer orders candidate pairs differently on ties and by its own alphabet ids, so
    exact equality of merges is not expected; its vocabulary must still compress TEST about as
    well (within 5%) when trained on the same text to the same size."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    ours = BPETokenizer().train(TRAIN, vocab_size=1200)
    t = hf.Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200 - 5,  # HF's vocabulary has no room for our 5 specials
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    t.train_from_iterator([TRAIN], trainer=trainer)
    n_ours, n_hf = len(ours.encode(TEST)), len(t.encode(TEST).ids)
    assert abs(n_ours - n_hf) / n_hf < 0.05
    hf_merges = json.loads(t.to_str())["model"]["merges"][:50]  # ["a", "b"] or "a b"
    first_hf = {tuple(m.split(" ") if isinstance(m, str) else m) for m in hf_merges}
    first_ours = {(ours.id_to_token(a), ours.id_to_token(b)) for a, b, _ in ours.merges[:50]}
    assert len(first_hf & first_ours) >= 40  # the frequent merges agree


# ---- file formats ------------------------------------------------------------------------


def test_gpt2_files_round_trip(tok: BPETokenizer, tmp_path: Path) -> None:
    vocab, merges = tok.save_gpt2_files(tmp_path)
    lines = merges.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#version: 0.2" and len(lines) == 1 + len(tok.merges)
    table = json.loads(vocab.read_text(encoding="utf-8"))
    assert table["<PAD>"] == 0 and table["Ġ"] == 5 + 32 and len(table) == tok.vocab_size
    back = BPETokenizer.from_gpt2_files(vocab, merges, pattern=tok.pattern_name or tok.pattern)
    assert back.to_dict() == tok.to_dict()
    assert back.encode(TEST, allowed_special=True) == tok.encode(TEST, allowed_special=True)


def test_tiktoken_file_round_trip(tok: BPETokenizer, tmp_path: Path) -> None:
    path = tmp_path / "t.tiktoken"
    tok.save_tiktoken_file(path)
    from tiktoken.load import load_tiktoken_bpe

    assert load_tiktoken_bpe(str(path)) == tok.export_tiktoken_ranks()  # tiktoken reads it
    back = BPETokenizer.from_tiktoken_file(path, pattern=tok.pattern_name or tok.pattern)
    assert back.to_dict() == tok.to_dict()  # specials back at 0 .. 4: the ids the file left free
    assert back.encode(TEST) == tok.encode(TEST)
    json_path = tmp_path / "t.json"
    back.save(json_path)
    assert load_tokenizer(json_path).encode(TEST) == tok.encode(TEST)


@pytest.fixture(scope="module")
def gpt2_layout_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """Files laid out like the real GPT-2 ones (written here, independently of bpe_io): bytes at
    ids 0..255 in the byte-to-unicode order, merge k at 256 + k, <|endoftext|> last."""
    src = BPETokenizer().train(TRAIN, vocab_size=800)
    table = bytes_to_unicode()
    spell = {}  # our id -> GPT-2 token string
    vocab: dict[str, int] = {}
    for k, byte in enumerate(table):
        spell[5 + byte] = table[byte]
        vocab[table[byte]] = k
    lines = ["#version: 0.2"]
    for k, (a, b, new) in enumerate(src.merges):
        spell[new] = spell[a] + spell[b]
        vocab[spell[new]] = 256 + k
        lines.append(f"{spell[a]} {spell[b]}")
    eot = len(vocab)
    vocab["<|endoftext|>"] = eot
    d = tmp_path_factory.mktemp("gpt2")
    (d / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (d / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d / "vocab.json", d / "merges.txt", eot


def test_load_gpt2_layout_keeps_its_ids(gpt2_layout_files: tuple[Path, Path, int]) -> None:
    vocab, merges, eot = gpt2_layout_files
    tok = BPETokenizer.from_gpt2_files(vocab, merges)
    assert eot == 256 + 800 - 261
    assert tok.special_tokens == {
        "<|endoftext|>": eot, "<PAD>": eot + 1, "<BOS>": eot + 2, "<EOS>": eot + 3,
        "<UNK>": eot + 4, "<MASK>": eot + 5,
    }  # fmt: skip
    assert (tok.pad_id, tok.mask_id) == (eot + 1, eot + 5) and tok.vocab_size == eot + 6
    assert tok.id_to_token(0) == "!" and tok.id_to_bytes(0) == b"!"
    from tokenizers import models, pre_tokenizers

    t = hf.Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    assert tok.encode(TEST) == t.encode(TEST).ids
    enc = tiktoken.Encoding(
        name="gpt2-like", pat_str=tok.pattern, mergeable_ranks=tok.export_tiktoken_ranks(),
        special_tokens=tok.special_tokens,
    )  # fmt: skip
    body = TEST[:2000].replace("<PAD>", "")
    text = body + "<|endoftext|><MASK>"
    assert tok.encode(text, allowed_special=True) == enc.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special=True)[-2:] == [eot, eot + 5]
    assert tok.decode(tok.encode(text, allowed_special=True), skip_special=True) == body


def test_load_tiktoken_layout(gpt2_layout_files: tuple[Path, Path, int], tmp_path: Path) -> None:
    tok = BPETokenizer.from_gpt2_files(*gpt2_layout_files[:2])
    path = tmp_path / "gpt2like.tiktoken"
    tok.save_tiktoken_file(path)  # ranks 0 .. eot - 1; <|endoftext|> is not in a rank file
    back = BPETokenizer.from_tiktoken_file(path)
    eot = gpt2_layout_files[2]
    assert back.special_tokens == {s: eot + k for k, s in enumerate(back.special_tokens)}
    assert back.pad_id == eot and back.vocab_size == eot + 5
    assert back.encode(TEST) == tok.encode(TEST)


def test_bad_files(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text(json.dumps({"a": 0, "b": 1}), encoding="utf-8")
    (tmp_path / "m.txt").write_text("#version: 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab_json lacks the single-byte tokens of bytes \[0,"):
        BPETokenizer.from_gpt2_files(tmp_path / "v.json", tmp_path / "m.txt")
    (tmp_path / "t.tiktoken").write_text("YQ== 0\nnot-base64!! 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2 is .*: allowed '<base64 token> <rank>'"):
        BPETokenizer.from_tiktoken_file(tmp_path / "t.tiktoken")
