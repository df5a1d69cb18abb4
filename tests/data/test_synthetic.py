"""Synthetic tasks: correct by recomputation, seeded, disjoint splits, order-dependent labels."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from glassformer.data import load_dataset
from glassformer.data.synthetic import SORTED_LABELS, split_of

N = 2000


@pytest.mark.parametrize(
    "name", ["reverse", "sort", "addition", "is_sorted", "induction", "interleaved"]
)
def test_same_seed_same_data_other_seed_other_data(name):
    a = load_dataset(name, num_examples=200, seed=1)
    b = load_dataset(name, num_examples=200, seed=1)
    c = load_dataset(name, num_examples=200, seed=2)
    assert a.examples == b.examples
    assert len(a) == len(c) == 200
    assert sum(x != y for x, y in zip(a.examples, c.examples, strict=True)) > 150


@pytest.mark.parametrize("name", ["reverse", "sort", "addition"])
def test_train_and_validation_are_disjoint(name):
    train = load_dataset(name, num_examples=N, seed=0)
    val = load_dataset(name, "validation", num_examples=N // 4, seed=0)
    train_src = {s for s, _ in train}
    val_src = {s for s, _ in val}
    assert train_src.isdisjoint(val_src)
    assert all(split_of(s) == "train" for s in train_src)
    assert all(split_of(s) == "validation" for s in val_src)


def test_reverse_reverses_within_the_options():
    ds = load_dataset("reverse", num_examples=N, min_length=3, max_length=7, alphabet="xyz")
    assert ds.task == "seq2seq" and len(ds) == N
    for src, tgt in ds:
        assert tgt == src[::-1]
        assert 3 <= len(src) <= 7 and set(src) <= set("xyz")
    assert {len(s) for s, _ in ds} == {3, 4, 5, 6, 7}


def test_reverse_with_word_symbols_and_separator():
    ds = load_dataset("reverse", num_examples=50, alphabet=["red", "green", "blue"], sep=" ")
    for src, tgt in ds:
        assert tgt.split(" ") == src.split(" ")[::-1]
        assert set(src.split(" ")) <= {"red", "green", "blue"}


def test_sort_sorts_in_alphabet_order():
    ds = load_dataset("sort", num_examples=N, alphabet="dcba", max_length=9)
    rank = {c: i for i, c in enumerate("dcba")}
    for src, tgt in ds:
        assert Counter(tgt) == Counter(src)
        assert [rank[c] for c in tgt] == sorted(rank[c] for c in src)


def test_addition_sums():
    ds = load_dataset("addition", num_examples=N, min_digits=1, max_digits=4, seed=3)
    digits = Counter()
    for src, tgt in ds:
        a, b = src.split("+")
        assert int(tgt) == int(a) + int(b)
        assert str(int(a)) == a and str(int(b)) == b  # no leading zeros
        assert str(int(tgt)) == tgt
        digits.update([len(a), len(b)])
    assert set(digits) == {1, 2, 3, 4}
    assert min(digits.values()) > 0.2 * 2 * N / 4  # digit counts roughly uniform


def test_is_sorted_labels_are_correct_and_balanced():
    ds = load_dataset("is_sorted", num_examples=N, seed=5)
    assert ds.task == "classification" and ds.labels == SORTED_LABELS == ("unsorted", "sorted")
    for label, text in ds:
        assert (label == "sorted") == (list(text) == sorted(text))
        assert len(set(text)) >= 2
    assert Counter(label for label, _ in ds) == {"sorted": N // 2, "unsorted": N // 2}
    # shuffled: labels do not simply alternate
    assert any(ds[i][0] == ds[i + 1][0] for i in range(len(ds) - 1))


def test_is_sorted_defeats_bag_of_words():
    """Every multiset of symbols occurs once with each label, so counts alone carry nothing."""
    ds = load_dataset("is_sorted", num_examples=N, seed=0)
    by_bag = defaultdict(Counter)
    for label, text in ds:
        by_bag[tuple(sorted(Counter(text).items()))][label] += 1
    assert all(c["sorted"] == c["unsorted"] for c in by_bag.values())
    # hence the best bag-of-words classifier (majority label per bag) is at chance: 50%
    best = sum(max(c.values()) for c in by_bag.values())
    assert best == N // 2


def test_is_sorted_validation_multisets_unseen_in_train():
    train = load_dataset("is_sorted", num_examples=N, seed=0)
    val = load_dataset("is_sorted", "validation", num_examples=200, seed=0)

    def bags(ds):
        return {"".join(sorted(t)) for _, t in ds}

    assert bags(train).isdisjoint(bags(val))


@pytest.mark.parametrize(
    ("name", "options", "fragment"),
    [
        ("reverse", {"num_examples": 0}, "num_examples is 0"),
        ("reverse", {"min_length": 5, "max_length": 2}, "min_length is 5 and max_length is 2"),
        ("sort", {"alphabet": ""}, "alphabet is ''"),
        ("sort", {"alphabet": "aab"}, "distinct"),
        ("addition", {"min_digits": 0}, "min_digits is 0"),
        ("is_sorted", {"num_examples": 7}, "num_examples is 7: allowed an even number"),
        ("is_sorted", {"alphabet": "a"}, "at least 2 distinct symbols"),
        ("reverse", {"seed": "x"}, "seed is 'x'"),
        ("induction", {"max_length": 20}, r"total_length is 32: allowed at least 2 \* max_length"),
        ("induction", {"total_length": "8"}, "total_length is '8': allowed an int"),
        ("induction", {"min_length": 0}, "min_length is 0"),
    ],
)
def test_bad_options_raise_valueerror_naming_them(name, options, fragment):
    with pytest.raises(ValueError, match=fragment):
        load_dataset(name, **options)


def test_too_small_input_space_for_validation_raises():
    # 1-symbol, length-1 sources: only "a", whose split is fixed, so one split can't be filled.
    empty_split = "validation" if split_of("a") == "train" else "train"
    with pytest.raises(ValueError, match="drew only 0"):
        load_dataset("reverse", empty_split, num_examples=5, alphabet="a", max_length=1)


def test_induction_repeats_a_random_string_to_a_fixed_length():
    """Each text is its string (min_length..max_length symbols of alphabet) repeated and cut to
    total_length; train and validation texts are disjoint."""
    opts = dict(min_length=2, max_length=5, total_length=12, alphabet="abcdefgh")
    train = load_dataset("induction", num_examples=N, seed=0, **opts)
    val = load_dataset("induction", "validation", num_examples=300, seed=0, **opts)
    assert (train.task, len(train)) == ("lm", N)

    def string(text):  # the repeated string: its first n symbols, n the smallest period
        n = next(k for k in range(1, 13) if all(text[i] == text[i % k] for i in range(12)))
        return text[:n]

    periods = Counter()
    for text in train:
        s = string(text)
        assert len(text) == 12 and set(text) <= set("abcdefgh")
        assert text == (s * 12)[:12] and len(s) <= 5
        periods[len(s)] += 1
    assert set(range(2, 6)) <= set(periods)  # every length drawn (a few strings repeat inside)
    assert set(train).isdisjoint(val)
    assert all(split_of(t) == "train" for t in train)
    assert all(split_of(t) == "validation" for t in val)


def test_induction_with_word_symbols():
    ds = load_dataset("induction", num_examples=20, alphabet=["red", "green", "blue", "cyan"],
                      sep=" ", min_length=1, max_length=3, total_length=7)  # fmt: skip
    for text in ds:
        words = text.split(" ")
        assert len(words) == 7 and set(words) <= {"red", "green", "blue", "cyan"}


def test_interleaved_follows_its_rule():
    """Two random symbols, then x_n = succ(x_{n-2}) in the alphabet, cyclically."""
    train = load_dataset("interleaved", num_examples=300, length=9, alphabet="abcd", seed=0)
    val = load_dataset("interleaved", "validation", num_examples=30, length=9, alphabet="abcd")
    assert train.task == "lm" and set(train.examples).isdisjoint(val.examples)
    assert all(split_of(t) == "train" for t in train.examples)
    assert "acbdcadba" in train.examples + val.examples  # a c, then b d c a d b a
    for text in train.examples + val.examples:
        assert len(text) == 9
        ranks = ["abcd".index(c) for c in text]
        assert all(ranks[n] == (ranks[n - 2] + 1) % 4 for n in range(2, 9))
    assert len({t[:2] for t in train.examples + val.examples}) == 16  # every start occurs
    with pytest.raises(ValueError, match="length is 2: allowed an int >= 3"):
        load_dataset("interleaved", length=2)
