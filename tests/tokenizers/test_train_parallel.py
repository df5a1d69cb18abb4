"""Training on several cores (glassformer/tokenizers/train_parallel.py, parallel.CountPool):
texts counted in batches, by worker processes, train the tokenizer that one process training on
all of them at once trains."""

from __future__ import annotations

import os
from collections import Counter

import pytest

import glassformer.tokenizers.train_parallel as tp
from glassformer.data.text_pieces import pieces
from glassformer.tokenizers import get_tokenizer
from glassformer.tokenizers.parallel import CountPool

LINE = "To be, or not to be: that is the qu\u00e9stion. Whether 'tis nobler 123,456!\n"
OTHER = "The slings and arrows of outrageous fortune, 3.14 times; o'er well-known seas.\n"
TEXT = (LINE * 3 + OTHER) * 30  # 4,620 characters
OPTIONS = {"char": {}, "word": {"max_vocab": 20}, "bpe": {"vocab_size": 300}}


@pytest.fixture
def pools(monkeypatch):
    """Small batches, so that a short text is many batches; the worker pools started."""
    monkeypatch.setattr(tp, "BATCH_CHARS", 50)
    started = []

    class Recorded(CountPool):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self)

    monkeypatch.setattr(tp, "CountPool", Recorded)
    return started


def cut(text: str) -> list[str]:
    """``text`` in pieces of about 37 characters, as a text file's are cut (text_pieces.py)."""
    return list(pieces((text[i : i + 13] for i in range(0, len(text), 13)), 37))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_counting_in_parts_trains_what_training_on_all_at_once_trains(kind):
    one = get_tokenizer(kind).train(TEXT, **OPTIONS[kind])
    counts = Counter()
    parts = cut(TEXT)
    assert len(parts) > 100
    for part in parts:
        counts.update(get_tokenizer(kind).count(part))
    two = get_tokenizer(kind).train_counts(counts, **OPTIONS[kind])
    assert two.to_dict() == one.to_dict()
    assert two.vocab_size == {"char": 5 + len(set(TEXT)), "word": 20, "bpe": 300}[kind]


@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_two_workers_train_the_tokenizer_of_one_process(kind, pools):
    texts = cut(TEXT)
    one = get_tokenizer(kind).train(texts, **OPTIONS[kind])
    done = []
    two = tp.train_on_cores(
        get_tokenizer(kind), iter(texts), OPTIONS[kind], workers=2, done=done.append
    )
    assert two.to_dict() == one.to_dict()
    [pool] = pools
    assert len(pool.pids) == 2 and all(map(gone, pool.pids))
    assert sum(done) == len(TEXT) and len(done) > 50  # every batch's characters, in order
    assert all(n >= tp.BATCH_CHARS for n in done[:-1])


def test_a_char_tokenizer_counts_in_this_process(pools):
    texts = cut(TEXT)
    one = get_tokenizer("char").train(texts)
    two = tp.train_on_cores(get_tokenizer("char"), texts, {}, workers=2)
    assert two.to_dict() == one.to_dict() and pools == []
    # workers count characters too, as this process does
    batches = [texts[i : i + 10] for i in range(0, len(texts), 10)]
    with CountPool(get_tokenizer("char"), 2) as pool:
        counts = list(pool.map(batches))
    assert counts == [get_tokenizer("char").count(b) for b in batches]
    assert sorted(sum(counts, Counter())) == sorted(set(TEXT))


def test_few_batches_are_counted_in_this_process(pools):
    one = get_tokenizer("bpe").train(TEXT[:120], vocab_size=270)
    two = tp.train_on_cores(
        get_tokenizer("bpe"), [TEXT[:60], TEXT[60:120]], {"vocab_size": 270}, workers=2
    )
    assert two.to_dict() == one.to_dict() and pools == []


def test_wrong_options_are_refused_before_anything_is_counted(pools):
    def texts():
        raise AssertionError("read")
        yield ""

    with pytest.raises(ValueError, match=r"^vocab_size is 100: allowed >= 261"):
        tp.train_on_cores(get_tokenizer("bpe"), texts(), {"vocab_size": 100}, workers=2)
    with pytest.raises(ValueError, match=r"^min_freq is 0: allowed an int >= 1"):
        tp.train_on_cores(get_tokenizer("word"), texts(), {"min_freq": 0}, workers=2)
    assert pools == []


def test_a_text_that_is_not_a_string_is_named(pools):
    with pytest.raises(TypeError, match=r"^texts\[3\] must be a str, got int"):
        tp.train_on_cores(get_tokenizer("word"), [TEXT, TEXT, TEXT, 5], {}, workers=2)
