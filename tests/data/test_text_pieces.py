"""A text cut into pieces (glassformer/data/text_pieces.py): the pieces join to the text, each
is cut where the tokenizers split anyway, and each is about the size asked for, however large
the blocks the text is read in (a piece as large as a read block left a batch of one piece, so
that a tokenizer.json's batch encoder ran on one core)."""

from __future__ import annotations

import random

from glassformer.data.text_pieces import cut, pieces


def words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices("abcdef", k=rng.randint(1, 9))) for _ in range(n))


def test_pieces_are_about_the_size_asked_for_whatever_the_blocks():
    text = words(20_000)  # about 110,000 characters
    for block in (97, 4_000, 50_000, len(text)):
        blocks = [text[i : i + block] for i in range(0, len(text), block)]
        got = list(pieces(blocks, 1_000))
        assert "".join(got) == text
        assert all(990 <= len(p) <= 1_000 for p in got[:-1]), (block, sorted(map(len, got))[-3:])
        assert all(p[0] == " " for p in got[1:])  # cut before a single space


def test_a_text_with_no_place_to_cut_before_the_size_is_cut_after_it():
    text = "x" * 2_500 + " y z"
    assert cut(text, 1_000) == 0 and cut(text) == 2_502
    assert list(pieces([text], 1_000)) == ["x" * 2_500 + " y", " z"]
