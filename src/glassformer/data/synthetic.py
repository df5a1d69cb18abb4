"""Synthetic tasks, generated on the fly from a seed ("Formal Algorithms for Transformers",
"Transformers Tasks").

Sequence-to-sequence (pairs ``(source, target)``, the P(z | x) task of the notes):

* ``reverse``: ``"abcd" -> "dcba"``;
* ``sort``: ``"dbca" -> "abcd"`` (symbols in the order of ``alphabet``);
* ``addition``: ``"123+45" -> "168"`` (decimal, no leading zeros).

Classification (pairs ``(label, text)``, the P(c | x) task of the notes):

* ``is_sorted``: is the sequence in non-decreasing alphabet order? Labels
  ``("unsorted", "sorted")``. The examples come in pairs drawn from the same multiset of
  symbols: its sorted arrangement and one unsorted shuffle of it. Every multiset therefore
  appears once with each label, so classes are exactly balanced and a bag-of-words model
  (one that sees only symbol counts) can do no better than chance: the label depends on order.

Language modelling (texts, the P(x[t] | x[1:t-1]) task of the notes):

* ``induction``: a random string of n symbols, repeated until the example holds
  ``total_length`` symbols (``"Xk3pXk3pXk3p"``, n = 4). The first copy is random; every symbol
  after the first repeated one is predictable only by looking back: it is the symbol that
  followed the previous occurrence of the current one. A two-layer decoder learns this with an
  induction head (Olsson et al. 2022, "In-context Learning and Induction Heads"): a head in
  layer 0 copies each position's previous token into it, and a head in layer 1 attends from t
  to (previous occurrence of x_t) + 1 and copies what it finds there. n varies from example to
  example (``min_length`` to ``max_length``), so no fixed offset between positions predicts
  the next symbol. With the default alphabet of 62 letters and digits most symbols occur once
  in their string; where one occurs twice, what follows it is ambiguous. Every example has
  the same length, so with a character tokenizer and ``max_len = total_length + 2`` (<BOS>,
  <EOS>) each LM window is exactly one example.
* ``interleaved``: two runs along the alphabet, interleaved (``"aqbrcsdt"``): the first two
  symbols are random, and every later one is the successor (cyclically, in ``alphabet``) of
  the symbol two places before it, x_n = succ(x_{n-2}). The current symbol says nothing about
  the next one; the symbol before it does. A one-layer decoder learns it with a head that
  attends to the previous token, which a symmetric attention score cannot do ("Formal
  Algorithms for Transformers", "Self-Attention across the sequence";
  docs/concepts/road-to-qk.md).

Determinism and splits: examples are drawn with ``random.Random(f"{task}:{split}:{seed}")``
(never the global RNG), so the same arguments give the same examples in every process.
Train and validation are disjoint: an example belongs to the validation split exactly when
``zlib.crc32`` of its key (the source text; for ``is_sorted`` the sorted text, so both members
of a pair fall on the same side; for ``induction`` and ``interleaved`` the whole text) is divisible
by 10, and each split keeps only its own draws.
Within a split the same example can occur twice when the space of inputs is small.

Symbols: ``alphabet`` is a string (each character a symbol) or a sequence of strings; the
symbols of a text are joined with ``sep`` (``""`` for character tokenizers, ``" "`` for
word tokenizers).
"""

from __future__ import annotations

import random
import string
import zlib
from collections.abc import Callable, Sequence

from .examples import TextDataset

# examples per split when num_examples is not given; the validation split is sized so that
# decoding all of it (exact match of a seq2seq model) takes seconds, not minutes
DEFAULT_SIZES: dict[str, int] = {"train": 10_000, "validation": 2_000}
VALIDATION_BUCKETS = 10  # 1 in 10 keys belongs to the validation split
SORTED_LABELS: tuple[str, ...] = ("unsorted", "sorted")
INDUCTION_ALPHABET = string.ascii_letters + string.digits  # 62 symbols: few repeats in a string


def reverse(
    split: str = "train",
    *,
    num_examples: int | None = None,
    min_length: int = 1,
    max_length: int = 12,
    alphabet: str | Sequence[str] = "abcdefghijklmnopqrstuvwxyz",
    sep: str = "",
    seed: int = 0,
) -> TextDataset:
    """Seq2seq pairs ``(x, reversed x)``; lengths uniform in [min_length, max_length]."""
    symbols = _check_symbols(alphabet, sep)
    _check_range("min_length", min_length, "max_length", max_length, low=1)

    def draw(rng: random.Random) -> tuple[str, tuple[str, str]]:
        xs = _random_symbols(rng, symbols, min_length, max_length)
        src = sep.join(xs)
        return src, (src, sep.join(reversed(xs)))

    examples = _generate("reverse", split, _num_examples(split, num_examples), seed, draw)
    return TextDataset("reverse", "seq2seq", split, examples, description=DESCRIPTIONS["reverse"])


def sort(
    split: str = "train",
    *,
    num_examples: int | None = None,
    min_length: int = 1,
    max_length: int = 12,
    alphabet: str | Sequence[str] = "abcdefghijklmnopqrstuvwxyz",
    sep: str = "",
    seed: int = 0,
) -> TextDataset:
    """Seq2seq pairs ``(x, x sorted in alphabet order)``; lengths in [min_length, max_length]."""
    symbols = _check_symbols(alphabet, sep)
    _check_range("min_length", min_length, "max_length", max_length, low=1)
    rank = {s: i for i, s in enumerate(symbols)}

    def draw(rng: random.Random) -> tuple[str, tuple[str, str]]:
        xs = _random_symbols(rng, symbols, min_length, max_length)
        src = sep.join(xs)
        return src, (src, sep.join(sorted(xs, key=rank.__getitem__)))

    examples = _generate("sort", split, _num_examples(split, num_examples), seed, draw)
    return TextDataset("sort", "seq2seq", split, examples, description=DESCRIPTIONS["sort"])


def addition(
    split: str = "train",
    *,
    num_examples: int | None = None,
    min_digits: int = 1,
    max_digits: int = 3,
    seed: int = 0,
) -> TextDataset:
    """Seq2seq pairs ``("a+b", "a+b evaluated")``; each operand's digit count is uniform in
    [min_digits, max_digits], then the operand uniform among numbers with that many digits."""
    _check_range("min_digits", min_digits, "max_digits", max_digits, low=1)

    def operand(rng: random.Random) -> int:
        d = rng.randint(min_digits, max_digits)
        return rng.randint(0 if d == 1 else 10 ** (d - 1), 10**d - 1)

    def draw(rng: random.Random) -> tuple[str, tuple[str, str]]:
        a, b = operand(rng), operand(rng)
        src = f"{a}+{b}"
        return src, (src, str(a + b))

    examples = _generate("addition", split, _num_examples(split, num_examples), seed, draw)
    return TextDataset("addition", "seq2seq", split, examples, description=DESCRIPTIONS["addition"])


def is_sorted(
    split: str = "train",
    *,
    num_examples: int | None = None,
    min_length: int = 2,
    max_length: int = 12,
    alphabet: str | Sequence[str] = "abcdefghijklmnopqrstuvwxyz",
    sep: str = "",
    seed: int = 0,
) -> TextDataset:
    """Classification ``(label, x)``: "sorted" when x is in non-decreasing alphabet order,
    else "unsorted"; pairs share a multiset (see the module docstring). ``num_examples`` even."""
    symbols = _check_symbols(alphabet, sep)
    if len(symbols) < 2:
        raise ValueError(f"alphabet is {alphabet!r}: allowed at least 2 distinct symbols")
    _check_range("min_length", min_length, "max_length", max_length, low=2)
    n = _num_examples(split, num_examples)
    if n % 2:
        raise ValueError(
            f"num_examples is {n}: allowed an even number (each multiset gives one sorted "
            f"and one unsorted example)"
        )
    rank = {s: i for i, s in enumerate(symbols)}

    def draw(rng: random.Random) -> tuple[str, tuple[tuple[str, str], tuple[str, str]]]:
        while True:
            xs = sorted(_random_symbols(rng, symbols, min_length, max_length), key=rank.__getitem__)
            if xs[0] != xs[-1]:  # at least two distinct symbols, so an unsorted shuffle exists
                break
        shuffled = list(xs)
        while shuffled == xs:
            rng.shuffle(shuffled)
        key = sep.join(xs)
        return key, (("sorted", key), ("unsorted", sep.join(shuffled)))

    pairs = _generate("is_sorted", split, n // 2, seed, draw)
    examples = [ex for pair in pairs for ex in pair]
    random.Random(f"is_sorted:{split}:{seed}:order").shuffle(examples)
    return TextDataset(
        "is_sorted",
        "classification",
        split,
        examples,
        labels=SORTED_LABELS,
        description=DESCRIPTIONS["is_sorted"],
    )


def induction(
    split: str = "train",
    *,
    num_examples: int | None = None,
    min_length: int = 4,
    max_length: int = 16,
    total_length: int = 32,
    alphabet: str | Sequence[str] = INDUCTION_ALPHABET,
    sep: str = "",
    seed: int = 0,
) -> TextDataset:
    """LM texts: a random string of n symbols (n uniform in [min_length, max_length], each
    symbol uniform in ``alphabet``), repeated and cut to ``total_length`` symbols; every
    example holds at least one whole repeat (2 · max_length <= total_length). See the module
    docstring."""
    symbols = _check_symbols(alphabet, sep)
    _check_range("min_length", min_length, "max_length", max_length, low=1)
    if isinstance(total_length, bool) or not isinstance(total_length, int):
        raise ValueError(f"total_length is {total_length!r}: allowed an int")
    if total_length < 2 * max_length:
        raise ValueError(
            f"total_length is {total_length}: allowed at least 2 * max_length = "
            f"{2 * max_length} (every example holds its string and one whole repeat)"
        )

    def draw(rng: random.Random) -> tuple[str, str]:
        xs = _random_symbols(rng, symbols, min_length, max_length)
        text = sep.join(xs[i % len(xs)] for i in range(total_length))
        return text, text

    examples = _generate("induction", split, _num_examples(split, num_examples), seed, draw)
    return TextDataset("induction", "lm", split, examples, description=DESCRIPTIONS["induction"])


def interleaved(
    split: str = "train",
    *,
    num_examples: int | None = None,
    length: int = 16,
    alphabet: str | Sequence[str] = "abcdefghijklmnopqrstuvwxyz",
    sep: str = "",
    seed: int = 0,
) -> TextDataset:
    """LM texts of ``length`` symbols: two random symbols, then x_n = succ(x_{n-2}), the next
    symbol of ``alphabet`` (cyclic) after the one two places back. See the module docstring."""
    symbols = _check_symbols(alphabet, sep)
    if isinstance(length, bool) or not isinstance(length, int) or length < 3:
        raise ValueError(f"length is {length!r}: allowed an int >= 3")
    rank = {s: i for i, s in enumerate(symbols)}

    def draw(rng: random.Random) -> tuple[str, str]:
        xs = rng.choices(symbols, k=2)
        for n in range(2, length):
            xs.append(symbols[(rank[xs[n - 2]] + 1) % len(symbols)])
        text = sep.join(xs)
        return text, text

    examples = _generate("interleaved", split, _num_examples(split, num_examples), seed, draw)
    return TextDataset(
        "interleaved", "lm", split, examples, description=DESCRIPTIONS["interleaved"]
    )


DESCRIPTIONS: dict[str, str] = {
    "reverse": "synthetic: reverse a string of letters ('abc' -> 'cba')",
    "sort": "synthetic: sort a string of letters ('cab' -> 'abc')",
    "addition": "synthetic: add two decimal numbers ('123+45' -> '168')",
    "is_sorted": "synthetic: is the string sorted? labels unsorted/sorted; order-dependent",
    "induction": "synthetic LM: distinct letters repeated ('qwerqwerqw'); an induction head forms",
    "interleaved": "synthetic LM: two interleaved alphabet runs ('aqbrcs'); a previous-token head",
}
GENERATORS: dict[str, Callable[..., TextDataset]] = {
    "reverse": reverse,
    "sort": sort,
    "addition": addition,
    "is_sorted": is_sorted,
    "induction": induction,
    "interleaved": interleaved,
}


def split_of(key: str) -> str:
    """The split ("train" | "validation") that an example with this key belongs to."""
    return "validation" if zlib.crc32(key.encode("utf-8")) % VALIDATION_BUCKETS == 0 else "train"


def _num_examples(split: str, num_examples: int | None) -> int:
    """Check ``split`` and resolve ``num_examples`` (None -> the split's default size)."""
    if split not in DEFAULT_SIZES:
        raise ValueError(f"split is {split!r}: allowed {', '.join(map(repr, DEFAULT_SIZES))}")
    if num_examples is None:
        return DEFAULT_SIZES[split]
    if isinstance(num_examples, bool) or not isinstance(num_examples, int) or num_examples < 1:
        raise ValueError(f"num_examples is {num_examples!r}: allowed a positive int")
    return num_examples


def _generate(task: str, split: str, n: int, seed: int, draw: Callable) -> list:
    """Draw ``n`` examples with ``draw(rng) -> (key, example)``, keeping those whose key
    belongs to ``split`` (see ``split_of``)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed is {seed!r}: allowed an int")
    rng = random.Random(f"{task}:{split}:{seed}")
    out: list = []
    max_draws = 100 * n + 10_000
    for _ in range(max_draws):
        key, example = draw(rng)
        if split_of(key) == split:
            out.append(example)
            if len(out) == n:
                return out
    raise ValueError(
        f"{task}: drew only {len(out)} of num_examples={n} {split} examples in {max_draws} "
        f"tries: allowed a larger input space (longer lengths, bigger alphabet or more digits)"
    )


def _random_symbols(rng: random.Random, symbols: list[str], lo: int, hi: int) -> list[str]:
    return rng.choices(symbols, k=rng.randint(lo, hi))


def _check_symbols(alphabet: str | Sequence[str], sep: str) -> list[str]:
    if not isinstance(sep, str):
        raise ValueError(f"sep is {sep!r}: allowed a str")
    symbols = list(alphabet)
    if not symbols or not all(isinstance(s, str) and s for s in symbols):
        raise ValueError(f"alphabet is {alphabet!r}: allowed a non-empty str or list of str")
    if len(set(symbols)) != len(symbols):
        raise ValueError(f"alphabet is {alphabet!r}: allowed distinct symbols only")
    if sep and any(sep in s for s in symbols):
        raise ValueError(f"alphabet is {alphabet!r}: allowed symbols not containing sep={sep!r}")
    return symbols


def _check_range(lo_name: str, lo: int, hi_name: str, hi: int, *, low: int) -> None:
    for name, v in ((lo_name, lo), (hi_name, hi)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} is {v!r}: allowed an int >= {low}")
    if lo > hi:
        raise ValueError(f"{lo_name} is {lo} and {hi_name} is {hi}: allowed {lo_name} <= {hi_name}")
