"""BPETokenizer: the hand-checked case, incremental = naive training, lossless round trip,
patterns, cache, errors. Parity with tiktoken / Hugging Face: test_bpe_reference.py.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.tokenizers import PATTERNS, BPETokenizer

BYTE0 = 5  # byte x has id 5 + x


def b(ch: str) -> int:
    return BYTE0 + ord(ch)


# ---- a naive reference trainer: recount every pair of every piece after each merge --------


def naive_train(text: str, pattern: str, n_merges: int) -> list[tuple[int, int, int]]:
    words = [[BYTE0 + x for x in piece.encode("utf-8")] for piece in regex.findall(pattern, text)]
    merges = []
    for k in range(n_merges):
        counts: Counter[tuple[int, int]] = Counter()
        for w in words:
            counts.update(pairwise(w))
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))  # most frequent, then smallest pair
        new = 261 + k
        merges.append((*best, new))
        words = [_merge(w, best, new) for w in words]
    return merges


def _merge(w: list[int], pair: tuple[int, int], new: int) -> list[int]:
    out, i = [], 0
    while i < len(w):
        if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(w[i])
            i += 1
    return out


# ---- the hand-checked case ----------------------------------------------------------------


def test_hand_checked_aaabdaaabac() -> None:
    """Worked by hand (a=102, b=103, c=104, d=105 as bytes 97..100 shifted by 5):

    aaabdaaabac  pairs: aa 4, ab 2, bd 1, da 1, ba 1, ac 1  -> merge aa = Z (261)
    ZabdZabac    pairs: Za 2, ab 2, bd 1, dZ 1, ba 1, ac 1  -> tie at 2: (a, b) = (102, 103)
                                                   is smaller than (Z, a) = (261, 102): ab = Y (262)
    ZYdZYac      pairs: ZY 2, Yd 1, dZ 1, Ya 1, ac 1        -> merge ZY = X (263)
    XdXac        = [263, 105, 263, 102, 104]
    """
    tok = BPETokenizer().train("aaabdaaabac", vocab_size=261 + 3)
    a, bb, c, d = b("a"), b("b"), b("c"), b("d")
    assert tok.merges == [(a, a, 261), (a, bb, 262), (261, 262, 263)]
    assert tok.encode("aaabdaaabac") == [263, d, 263, a, c]
    assert tok.vocab_size == 264
    assert [tok.id_to_bytes(i) for i in (261, 262, 263)] == [b"aa", b"ab", b"aaab"]
    assert tok.id_to_token(263) == "aaab" and tok.token_to_id("aaab") == 263
    assert tok.decode([263, d, 263, a, c]) == "aaabdaaabac"
    assert naive_train("aaabdaaabac", PATTERNS["gpt2"], 3) == tok.merges


def test_byte_ids_and_untrained_tokenizer_is_bytes() -> None:
    tok = BPETokenizer()
    assert tok.encode("A é") == [5 + 65, 5 + 32, 5 + 0xC3, 5 + 0xA9]
    assert tok.id_to_bytes(5) == b"\x00" and tok.id_to_bytes(260) == b"\xff"
    assert tok.id_to_token(5 + 32) == "Ġ" and tok.id_to_token(5 + ord("!")) == "!"
    assert tok.token_to_id("Ġ") == 37


def test_training_stops_when_no_pair_is_left() -> None:
    tok = BPETokenizer().train("ab ab", vocab_size=10_000)
    # pieces "ab", " ab": merges (a, b) then (space, ab); then every piece is one token
    assert tok.merges == [(b("a"), b("b"), 261), (b(" "), 261, 262)]
    assert tok.vocab_size == 263
    assert BPETokenizer().train("abab ab", vocab_size=300, min_frequency=2).merges == [
        (b("a"), b("b"), 261)  # "ab" occurs 3 times; after it every pair occurs once
    ]
    assert BPETokenizer().train("", vocab_size=300).vocab_size == 261


CORPORA = [
    "the cat sat on the mat. the cat ate the rat!",
    "aaaa aaa aa a aaaaaaa   aaaa\n\n\taaa",
    "low lower lowest newer newest wider widest " * 3,
    "León es la mejor ciudad de España. 你好，世界！😀😀 über naïve café 12345 1234 123",
    "abababab bababa abab ba ab a b aabb bbaa",
]


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
@pytest.mark.parametrize("text", CORPORA)
def test_incremental_equals_naive(text: str, pattern: str) -> None:
    tok = BPETokenizer(pattern).train(text, vocab_size=261 + 60)
    assert tok.merges == naive_train(text, PATTERNS[pattern], 60)
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="ab c\n", max_size=80), n=st.integers(1, 25))
def test_incremental_equals_naive_hypothesis(text: str, n: int) -> None:
    """A small alphabet makes many ties and overlapping pairs (aaa, abab)."""
    tok = BPETokenizer(pattern=r"[\s\S]{1,12}").train(text, vocab_size=261 + n)
    assert tok.merges == naive_train(text, r"[\s\S]{1,12}", n)


def test_training_from_several_texts_counts_pieces_across_them() -> None:
    one = BPETokenizer().train(["the cat", " the cat", " sat"], vocab_size=270)
    two = BPETokenizer().train("the cat the cat sat", vocab_size=270)
    assert one.merges == two.merges  # same pieces, same counts


# ---- lossless round trip ------------------------------------------------------------------

TRAIN_TEXT = "\n".join(CORPORA) * 2


@pytest.fixture(scope="module")
def gpt2_tok() -> BPETokenizer:
    return BPETokenizer().train(TRAIN_TEXT, vocab_size=400)


@pytest.fixture(scope="module")
def cl100k_tok() -> BPETokenizer:
    return BPETokenizer("cl100k").train(TRAIN_TEXT, vocab_size=400)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_round_trip_any_text_gpt2(gpt2_tok: BPETokenizer, s: str) -> None:
    assert gpt2_tok.decode(gpt2_tok.encode(s)) == s


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_round_trip_any_text_cl100k(cl100k_tok: BPETokenizer, s: str) -> None:
    ids = cl100k_tok.encode(s, add_bos=True, add_eos=True)
    assert cl100k_tok.decode(ids, skip_special=True) == s
    assert len(ids) - 2 <= len(s.encode("utf-8"))


@pytest.mark.parametrize(
    "s",
    [
        "",
        "\x00\x01\x7f control \x1b[0m",
        "emoji 👨‍👩‍👧 🇪🇸 👍🏽 ❤️",
        "accents: naïve café León Ångström e\u0301",
        "中文分词器 你好，世界！",
        "   \n\n\t  \r\n ",
        "\ufeffBOM and \U0010ffff and \ufffd",
        "<PAD><BOS><EOS><UNK><MASK>",
    ],
)
def test_round_trip_examples(gpt2_tok: BPETokenizer, s: str) -> None:
    ids = gpt2_tok.encode(s)
    assert gpt2_tok.decode(ids) == s
    assert not set(ids) & gpt2_tok.special_ids


def test_lone_surrogate_is_rejected(gpt2_tok: BPETokenizer) -> None:
    with pytest.raises(ValueError, match=r"text contains '\\ud800', a lone surrogate: allowed"):
        gpt2_tok.encode("ok \ud800 no")


def test_decode_invalid_utf8_is_replaced(gpt2_tok: BPETokenizer) -> None:
    assert gpt2_tok.decode([5 + 0xE4, 5 + ord("a")]) == "\ufffda"  # a truncated 3-byte char


def test_allowed_special(gpt2_tok: BPETokenizer) -> None:
    text = "the <MASK> sat<EOS>"
    ids = gpt2_tok.encode(text, allowed_special=True)
    assert ids == [*gpt2_tok.encode("the "), 4, *gpt2_tok.encode(" sat"), 2]
    assert gpt2_tok.decode(ids) == text
    assert gpt2_tok.decode(ids, skip_special=True) == "the  sat"
    assert gpt2_tok.decode(gpt2_tok.encode(text)) == text


# ---- patterns and cache --------------------------------------------------------------------


def test_patterns_split_as_documented() -> None:
    text = "I'm  here: 12345 ok?\n\n  Yes"
    assert regex.findall(PATTERNS["gpt2"], text) == [
        "I", "'m", " ", " here", ":", " 12345", " ok", "?", "\n\n ", " Yes",
    ]  # fmt: skip
    assert regex.findall(PATTERNS["cl100k"], text) == [
        "I", "'m", " ", " here", ":", " ", "123", "45", " ok", "?\n\n", " ", " Yes",
    ]  # fmt: skip
    assert BPETokenizer("gpt4").pattern == PATTERNS["cl100k"]
    assert BPETokenizer("gpt4").pattern_name == "cl100k"
    custom = BPETokenizer(r"\S+|\s+")
    assert custom.pattern_name is None and custom.pattern == r"\S+|\s+"


def test_cache_is_bounded_and_transparent(gpt2_tok: BPETokenizer) -> None:
    text = " ".join(f"word{i} x{i % 7}" for i in range(500))
    small = BPETokenizer.from_dict(gpt2_tok.to_dict())
    assert isinstance(small, BPETokenizer)
    small._cache.limit = 10
    none = BPETokenizer(cache_size=0)
    none._install(gpt2_tok._byte_ids, gpt2_tok.merges, gpt2_tok.special_tokens)
    expected = gpt2_tok.encode(text)
    assert small.encode(text) == expected == none.encode(text)
    assert len(small._cache) <= 10 and len(none._cache) == 0
    assert len(gpt2_tok._cache) >= 500


# ---- errors --------------------------------------------------------------------------------


def test_errors() -> None:
    with pytest.raises(ValueError, match=r"vocab_size is 260: allowed >= 261 \(5 special tokens"):
        BPETokenizer().train("abc", vocab_size=260)
    with pytest.raises(ValueError, match=r"vocab_size is '300': allowed an int >= 261"):
        BPETokenizer().train("abc", vocab_size="300")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"min_frequency is 0: allowed an int >= 1"):
        BPETokenizer().train("abc", vocab_size=300, min_frequency=0)
    with pytest.raises(ValueError, match=r"pattern is 'gpt3': allowed a name in \['cl100k', 'gp"):
        BPETokenizer("gpt3")
    with pytest.raises(ValueError, match=r"pattern is '\(unclosed': not a valid regex"):
        BPETokenizer("(unclosed")
    with pytest.raises(ValueError, match=r"cache_size is -1: allowed an int >= 0"):
        BPETokenizer(cache_size=-1)
    with pytest.raises(TypeError, match="vocab_size"):
        BPETokenizer().train("abc")  # type: ignore[call-arg]
