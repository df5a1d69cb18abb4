"""CharTokenizer and WordTokenizer: vocabularies, <UNK>, round trips, word normalisation."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.tokenizers import UNK_ID, CharTokenizer, WordTokenizer
from glassformer.tokenizers.word import join_words, split_words

# ---- char -----------------------------------------------------------------------------------


def test_char_vocab_sorted_from_5() -> None:
    tok = CharTokenizer().train(["León is", "the best city"])
    chars = sorted(set("León isthe best city"))
    assert [tok.id_to_token(i) for i in range(5, tok.vocab_size)] == chars
    assert chars[:3] == [" ", "L", "b"]
    assert tok.encode("Leó") == [6, 5 + chars.index("e"), 5 + chars.index("ó")]
    assert tok.encode("León!") == [*tok.encode("León"), UNK_ID]
    assert tok.decode(tok.encode("xLz")) == "<UNK>L<UNK>"
    assert tok.decode(tok.encode("xLz"), skip_special=True) == "L"


def test_char_training_is_order_independent() -> None:
    a = CharTokenizer().train(["abc", "xyz"])
    b = CharTokenizer().train(["zyx", "cba"])
    assert a.to_dict() == b.to_dict()


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_char_round_trip(s: str) -> None:
    tok = CharTokenizer().train(s)
    ids = tok.encode(s)
    assert len(ids) == len(s)
    assert tok.decode(ids) == s
    assert tok.vocab_size == 5 + len(set(s))


# ---- word: splitting and spacing -------------------------------------------------------------


def test_split_words() -> None:
    assert split_words("León is the best city in Spain.") == [
        "León", "is", "the", "best", "city", "in", "Spain", ".",
    ]  # fmt: skip
    assert split_words("Don't  stop,\tO'er the well-known (3.14) 1,000 ways!\r\n\nBye") == [
        "Don't", "stop", ",", "O'er", "the", "well-known", "(", "3.14", ")", "1,000", "ways",
        "!", "\n", "\n", "Bye",
    ]  # fmt: skip
    assert split_words("3.14abc <PAD>") == ["3", ".", "14abc", "<", "PAD", ">"]


def test_normalize_examples() -> None:
    norm = WordTokenizer.normalize
    assert norm("Hello ,  world !\n\nHow are   you ?") == "Hello, world!\n\nHow are you?"
    assert norm("  leading and trailing  \t") == "leading and trailing"
    assert norm("a ( b ) [c] {d} ¿e? ¡f!") == "a (b) [c] {d} ¿e? ¡f!"
    assert norm('He said " hi there " , then left .') == 'He said "hi there", then left.'
    assert norm('"a" "b"') == '"a" "b"'
    assert norm("line one \n  line two\r\n") == "line one\nline two\n"
    assert norm("100 % sure ; 3 : 1") == "100% sure; 3: 1"
    assert norm("it' s") == "it' s"  # a lone apostrophe attaches to the word before


def test_word_vocab_min_freq_max_vocab_and_ties() -> None:
    text = "b a c a b a d d , e ."
    # counts: a 3, b 2, d 2, c 1, e 1, ',' 1, '.' 1 -> ties by code point: ',' < '.' < 'c' < 'e'
    tok = WordTokenizer().train(text)
    order = ["a", "b", "d", ",", ".", "c", "e"]
    assert [tok.id_to_token(i) for i in range(5, tok.vocab_size)] == order
    assert [tok.token_to_id(w) for w in order] == list(range(5, 12))
    assert WordTokenizer().train(text, min_freq=2).vocab_size == 5 + 3
    small = WordTokenizer().train(text, max_vocab=7)
    assert [small.id_to_token(i) for i in range(small.vocab_size)][5:] == ["a", "b"]
    assert small.encode("a b d zebra") == [5, 6, UNK_ID, UNK_ID]
    assert small.decode(small.encode("a b d zebra")) == "a b <UNK> <UNK>"
    assert small.decode(small.encode("a b d"), skip_special=True) == "a b"


def test_word_bad_options() -> None:
    with pytest.raises(ValueError, match=r"min_freq is 0: allowed an int >= 1"):
        WordTokenizer().train("a", min_freq=0)
    with pytest.raises(ValueError, match=r"max_vocab is 3: allowed None or an int >= 5"):
        WordTokenizer().train("a", max_vocab=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        WordTokenizer().train("a", vocab_size=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword"):
        CharTokenizer().train("a", lowercase=True)  # type: ignore[call-arg]


def test_word_round_trip_of_normalised_text() -> None:
    text = (
        "To be, or not to be: that is the question!\n"
        'Whether \'tis nobler (in the mind) to suffer "the slings"; 3.14% of 1,000 arrows?\n'
        "León's well-known café — ¿qué? ¡Sí!\n"
    )
    tok = WordTokenizer().train(text)
    assert WordTokenizer.normalize(text) != text  # "'tis" and "—" are respaced
    norm = WordTokenizer.normalize(text)
    assert tok.decode(tok.encode(text)) == norm
    assert tok.decode(tok.encode(norm)) == norm
    assert UNK_ID not in tok.encode(norm)


def _strip_space(s: str) -> str:
    return regex.sub(r"\s", "", s)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_word_round_trip_up_to_normalisation(s: str) -> None:
    """decode(encode(s)) == normalize(s), and normalize keeps every non-whitespace character
    and every newline, in order, and is idempotent."""
    tok = WordTokenizer().train(s)
    out = tok.decode(tok.encode(s))
    assert out == WordTokenizer.normalize(s) == join_words(split_words(s))
    assert _strip_space(out) == _strip_space(s)
    assert [c for c in out if c == "\n" or not regex.match(r"\s", c)] == [
        c for c in s if c == "\n" or not regex.match(r"\s", c)
    ]
    assert WordTokenizer.normalize(out) == out
    assert split_words(out) == split_words(s)
    assert not regex.search(r"\s\s", out.replace("\n", "#"))  # no runs of whitespace left


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", "c'd", "x-y", "1.5", ",", ".", "(", ")", '"', "'",
                                 "‘", "’", "“", "”", "!", "\n", "¿", "-", "%"])))  # fmt: skip
def test_word_tokens_survive_join(tokens: list[str]) -> None:
    """Joining tokens and splitting again gives the same tokens (the spacing is unambiguous)."""
    assert split_words(join_words(tokens)) == tokens
