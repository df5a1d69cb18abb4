"""Trained tokenizers kept in the token cache (glassformer/data/tokenizer_cache.py): a tokenizer
trained on a text file or on large records is read back by the next run with the same data and
options instead of being trained again; other data or options, or a damaged file, train anew."""

from __future__ import annotations

import json
import threading
import time
from fractions import Fraction

import pytest

import glassformer.data.text_pieces as text_pieces
import glassformer.data.token_cache as tc
import glassformer.data.tokenizer_cache as tk
from glassformer.data import load_dataset
from glassformer.data.cache_lock import exclusive
from glassformer.data.text_pieces import pieces
from glassformer.runs import Run
from glassformer.tokenizers import get_tokenizer

TEXT = "To be, or not to be: that is the qu\u00e9stion.\nWhether 'tis nobler 123,456!\n" * 60
OPTIONS = {"char": {}, "word": {"max_vocab": 30}, "bpe": {"vocab_size": 300}}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of the test's own; the trainings counted (the options of each)."""
    folder = tmp_path / "tokens"
    monkeypatch.setenv(tc.CACHE_ENV, str(folder))
    monkeypatch.setenv(tc.WORKERS_ENV, "1")
    trainings = []
    train_on_cores = tk.train_on_cores

    def counted(tokenizer, texts, options, **kwargs):
        trainings.append((tokenizer.kind, options))
        return train_on_cores(tokenizer, texts, options, **kwargs)

    monkeypatch.setattr(tk, "train_on_cores", counted)
    return folder, trainings


@pytest.fixture
def notes(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def kept(folder):
    return sorted((folder / "tokenizers").glob("*.json"))


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_a_second_training_on_the_same_file_reads_the_first(kind, cache, notes):
    folder, trainings = cache
    train = load_dataset(notes, task="lm")
    first = tk.trained_tokenizer(train, kind, OPTIONS[kind])
    expected = get_tokenizer(kind).train(TEXT, **OPTIONS[kind])
    assert first.to_dict() == expected.to_dict()
    assert trainings == [(kind, OPTIONS[kind])]
    [path] = kept(folder)
    assert json.loads(path.read_text(encoding="utf-8")) == expected.to_dict()
    second = tk.trained_tokenizer(load_dataset(notes, task="lm"), kind, OPTIONS[kind])
    assert second.to_dict() == expected.to_dict() and len(trainings) == 1
    assert type(second) is type(expected)
    assert second.encode(TEXT) == expected.encode(TEXT)


def test_other_options_another_part_or_a_changed_file_train_anew(cache, notes):
    folder, trainings = cache
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 300})
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 290})
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "word", {})
    held_out = load_dataset(notes, task="lm", val_fraction=0.5)  # the first half
    half = tk.trained_tokenizer(held_out, "bpe", {"vocab_size": 300})
    first_half = TEXT[: held_out.part.end]
    assert half.to_dict() == get_tokenizer("bpe").train(first_half, vocab_size=300).to_dict()
    assert len(trainings) == 4 and len(kept(folder)) == 4
    notes.write_text(TEXT.upper(), encoding="utf-8")
    changed = tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 300})
    assert changed.to_dict() == get_tokenizer("bpe").train(TEXT.upper(), vocab_size=300).to_dict()
    assert len(trainings) == 5 and len(kept(folder)) == 5


@pytest.mark.parametrize("damage", ['{"format": ', "", '{"kind": "char"}', "char"])
def test_a_damaged_file_is_trained_again_and_replaced(damage, cache, notes):
    folder, trainings = cache
    expected = tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 300})
    [path] = kept(folder)
    if damage == "char":  # a tokenizer of another kind
        get_tokenizer("char").train(TEXT).save(path)
    else:
        path.write_text(damage, encoding="utf-8")
    again = tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 300})
    assert again.to_dict() == expected.to_dict() and len(trainings) == 2
    assert json.loads(path.read_text(encoding="utf-8")) == expected.to_dict()
    assert [p.name for p in (folder / "tokenizers").iterdir()] == [path.name]  # nothing aside


def test_training_shows_progress_and_a_hit_one_line(cache, notes, capsys, monkeypatch):
    folder, _ = cache
    monkeypatch.setattr(tk, "SHOWN_CHARS", 100)
    options = {"vocab_size": 300}
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", options, progress="lines")
    err = capsys.readouterr().err.splitlines()
    n = f"{len(TEXT):,}"
    done = f"training the bpe tokenizer on notes.txt: {n}/{n} characters (100%), done in "
    assert err[-1].startswith(done)
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", options, progress="lines")
    [path] = kept(folder)
    assert capsys.readouterr().err == f"tokenizer: bpe 300 read from the cache {path}\n"
    tk.trained_tokenizer(load_dataset(notes, task="lm"), "bpe", {"vocab_size": 300})
    assert capsys.readouterr().err == ""  # progress "none"


def test_large_records_are_kept_by_their_contents_and_small_data_is_not(
    cache, tmp_path, monkeypatch
):
    folder, trainings = cache
    monkeypatch.setattr(tk, "CACHE_CHARS", 1000)
    line = TEXT.replace("\n", " ")
    rows = [f"{'ham' if i % 3 else 'spam'}\t{line[i : i + 40]}\n" for i in range(100)]
    tsv = tmp_path / "sms.tsv"
    tsv.write_text("".join(rows), encoding="utf-8")
    records = load_dataset(tsv, task="classification")
    texts = [text for _, text in records]
    first = tk.trained_tokenizer(records, "word", {})
    assert first.to_dict() == get_tokenizer("word").train(texts).to_dict()
    copy = tmp_path / "copy.tsv"  # the same records in another file: the same tokenizer
    copy.write_text("".join(rows), encoding="utf-8")
    tk.trained_tokenizer(load_dataset(copy, task="classification"), "word", {})
    assert len(trainings) == 1 and len(kept(folder)) == 1
    tsv.write_text("".join(rows[:-1]), encoding="utf-8")
    tk.trained_tokenizer(load_dataset(tsv, task="classification"), "word", {})
    assert len(trainings) == 2 and len(kept(folder)) == 2
    monkeypatch.setattr(tk, "CACHE_CHARS", 10**6)  # small records, and built-in data: trained
    tk.trained_tokenizer(load_dataset(tsv, task="classification"), "word", {})
    tk.trained_tokenizer(load_dataset("reverse"), "char", {})
    assert len(trainings) == 4 and len(kept(folder)) == 2


def test_a_file_changed_while_it_trains_is_refused_and_nothing_is_kept(cache, notes, monkeypatch):
    folder, _ = cache
    train = load_dataset(notes, task="lm")  # scanned: its identity is the file as it was
    notes.write_text(TEXT.replace("nobler", "humbler"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"^file '.*notes.txt' changed while it was encoded: "):
        tk.trained_tokenizer(train, "bpe", {"vocab_size": 300})
    assert kept(folder) == []


def test_a_cache_folder_that_cannot_be_written_trains_for_the_run(cache, notes, tmp_path):
    _, trainings = cache
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder", encoding="utf-8")
    train = load_dataset(notes, task="lm", cache=str(blocked))
    for _ in range(2):
        tok = tk.trained_tokenizer(train, "bpe", {"vocab_size": 300})
        assert tok.to_dict() == get_tokenizer("bpe").train(TEXT, vocab_size=300).to_dict()
    assert len(trainings) == 2


def test_a_new_run_on_the_same_file_reads_the_tokenizer_of_the_first(cache, notes, tmp_path):
    _, trainings = cache
    options = {"data": str(notes), "tokenizer": "bpe", "vocab_size": 300, "steps": 1}
    first = Run.plan(out=tmp_path / "one", **options)
    first.load()
    second = Run.plan(out=tmp_path / "two", **options)
    second.load()
    assert trainings == [("bpe", {"vocab_size": 300})]
    assert second.tokenizer.to_dict() == first.tokenizer.to_dict()
    train_part = TEXT[: first.train_data.part.end]  # the last 10% validates the run
    expected = get_tokenizer("bpe").train(train_part, vocab_size=300)
    assert first.tokenizer.to_dict() == expected.to_dict()


def test_a_process_waits_for_the_one_that_trains_and_reads_its_tokenizer(
    cache, notes, capsys, monkeypatch
):
    folder, trainings = cache
    monkeypatch.setattr(tk, "SHOWN_CHARS", 100)
    train = load_dataset(notes, task="lm")
    options = {"vocab_size": 300}
    key = tk._key(tk._identity(train, train.part.chars), get_tokenizer("bpe"), options)
    path, lock = folder / "tokenizers" / f"{key}.json", folder / "tokenizers" / f"{key}.lock"
    path.parent.mkdir(parents=True)
    expected = get_tokenizer("bpe").train(TEXT, **options)
    found = []
    with exclusive(lock, lambda: None):  # another process trains
        waiter = threading.Thread(
            target=lambda: found.append(
                tk.trained_tokenizer(train, "bpe", options, progress="lines")
            )
        )
        waiter.start()
        said = ""
        for _ in range(3000):  # it says that it waits (at most 30 s)
            said += capsys.readouterr().err
            if said.startswith("waiting for another process training the bpe tokenizer"):
                break
            time.sleep(0.01)
        expected.save(path)
    waiter.join()
    assert said == f"waiting for another process training the bpe tokenizer (lock file {lock})\n"
    assert found[0].to_dict() == expected.to_dict() and trainings == []
    assert capsys.readouterr().err == f"tokenizer: bpe 300 read from the cache {path}\n"


def test_a_bpe_tokenizer_learns_from_an_even_sample_of_a_large_split(
    cache, notes, capsys, monkeypatch
):
    folder, trainings = cache
    monkeypatch.setattr(text_pieces, "PIECE_CHARS", 211)  # TEXT is 22 pieces
    monkeypatch.setattr(tk, "SHOWN_CHARS", 100)
    chosen = [p for i, p in enumerate(pieces([TEXT])) if i % 4 == 0]  # 1/4 of the pieces
    assert len(chosen) == 6 and len(TEXT) // 4 == 1080
    train = load_dataset(notes, task="lm", tokenizer_sample=len(TEXT) // 4)
    got = tk.trained_tokenizer(train, "bpe", {"vocab_size": 300}, progress="lines")
    assert got.to_dict() == get_tokenizer("bpe").train(chosen, vocab_size=300).to_dict()
    assert got.to_dict() != get_tokenizer("bpe").train(TEXT, vocab_size=300).to_dict()
    n = f"{len(TEXT):,}"
    what = f"training the bpe tokenizer on notes.txt (a sample of 1,080 of its {n} characters)"
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"{what}: {n}/{n} characters (100%), done in ")
    # the sample is part of the key; 0, a sample as large as the split, and the default (a
    # hundred million characters) train on every character, as a char or word tokenizer does
    whole = get_tokenizer("bpe").train(TEXT, vocab_size=300).to_dict()
    for sample in (0, len(TEXT), None):
        train = load_dataset(notes, task="lm", tokenizer_sample=sample)
        assert tk.trained_tokenizer(train, "bpe", {"vocab_size": 300}).to_dict() == whole
    assert len(trainings) == 2 and len(kept(folder)) == 2
    train = load_dataset(notes, task="lm", tokenizer_sample=1)
    word = tk.trained_tokenizer(train, "word", {})
    assert word.to_dict() == get_tokenizer("word").train(TEXT).to_dict()


def test_the_sample_is_spread_evenly_and_holds_the_first_text():
    texts = [str(i) for i in range(10)]
    assert list(tk.sampled(texts, Fraction(3, 10))) == ["0", "3", "6"]
    assert list(tk.sampled(texts, Fraction(1, 100))) == ["0"]
    assert list(tk.sampled(texts, Fraction(1, 1))) == texts
    passed = []
    list(tk.sampled(["ab", "cde", "f"], Fraction(1, 3), passed=passed.append))
    assert passed == [3, 1]


@pytest.mark.parametrize("bad", [-1, 1.5, "all", True])
def test_a_tokenizer_sample_that_is_not_a_count_is_refused(bad, notes):
    with pytest.raises(ValueError, match=rf"^tokenizer_sample is {bad!r}: allowed an int >= 0"):
        load_dataset(notes, task="lm", tokenizer_sample=bad)
