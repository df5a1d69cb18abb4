"""The token cache (glassformer/data/token_cache.py): a text file's tokens are encoded once, in
pieces, into a token file keyed by the file's bytes and the tokenizer, and read back through a
memory map; a half-written token file is never read."""

from __future__ import annotations

import dataclasses
import errno
import os
import time

import numpy as np
import pytest
import torch

import glassformer.data.documents as documents
import glassformer.data.token_cache as tc
from glassformer.data import load_dataset
from glassformer.data.documents import TextPart, read_chars
from glassformer.data.encoding import PackedWindows
from glassformer.data.token_cache import cache_folder, token_dtype, token_file
from glassformer.tokenizers import get_tokenizer
from glassformer.training.batches import BatchStream

# a byte-order mark, \r\n line ends, a character of two bytes, runs of spaces and blank lines
TEXT = "\ufeff" + (
    "To be,  or not to be:\r\nthat is the qu\u00e9stion.\n\n   Whether 'tis nobler 123,456.\r\n"
) * 40
TRAINING = {"char": {}, "word": {}, "bpe": {"vocab_size": 300}}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of the test's own, and small blocks and pieces, so that a tiny file is
    read and encoded in many pieces, in this process (test_parallel_encode.py: in several)."""
    folder = tmp_path / "tokens"
    monkeypatch.setenv(tc.CACHE_ENV, str(folder))
    monkeypatch.setenv(tc.WORKERS_ENV, "1")
    monkeypatch.setattr(documents, "READ_BYTES", 13)
    monkeypatch.setattr(tc, "ENCODE_CHARS", 37)
    return folder


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    return path


@pytest.fixture
def encodings(monkeypatch):
    """How many times a part was encoded."""
    calls = []
    encode = tc._encode
    monkeypatch.setattr(tc, "_encode", lambda part, *a: (calls.append(part), encode(part, *a)))
    return calls


def stored(folder):
    """The token files (and temporary files) of a cache folder, not the scans of the text
    files (text_scan.py) in its folder scans/."""
    return sorted(p for p in folder.iterdir() if p.name != "scans")


def splits(path):
    return [load_dataset(path, s, task="lm", val_fraction=0.1) for s in ("train", "validation")]


def trained(kind, dataset):
    return get_tokenizer(kind).train(list(dataset.texts()), **TRAINING[kind])


@pytest.mark.parametrize("kind", sorted(TRAINING))
def test_the_token_file_holds_the_tokens_of_encoding_the_whole_part_at_once(
    kind, corpus, cache
):
    train, validation = splits(corpus)
    assert (train.part.start, train.part.end) == (0, 2772)  # \r\n read as \n, no mark
    assert (validation.part.start, validation.part.end) == (2772, 3080)  # the last 10%
    tokenizer = trained(kind, train)
    for dataset in (train, validation):
        tokens = token_file(dataset.part, tokenizer)
        expected = tokenizer.encode(dataset.examples[0], add_bos=True, add_eos=True)
        assert isinstance(tokens, np.memmap) and tokens.dtype == np.uint16
        assert tokens.tolist() == expected
        [file] = [p for p in stored(cache) if p.stat().st_size == 2 * len(expected)]
        assert file.suffix == ".uint16"  # 2 bytes a token
    pieces = list(tc._pieces(read_chars(corpus, 0, 2772)))
    assert len(pieces) > 50 and "".join(pieces) == train.examples[0]


def test_a_second_read_comes_from_the_cache_and_says_so(
    corpus, cache, encodings, monkeypatch, capsys
):
    train, _ = splits(corpus)
    tokenizer = trained("char", train)
    first = token_file(train.part, tokenizer, progress="lines")
    assert len(encodings) == 1 and capsys.readouterr().err == ""  # a short part: quiet
    again = token_file(train.part, trained("char", train), progress="lines")  # a new tokenizer
    assert len(encodings) == 1 and again.tolist() == first.tolist()  # the same JSON: a hit

    monkeypatch.setattr(tc, "SHOWN_CHARS", 100)  # parts from 100 characters on are shown
    token_file(train.part, tokenizer, progress="lines")
    assert len(encodings) == 1
    [file] = stored(cache)
    assert capsys.readouterr().err == (
        f"corpus.txt, characters 0..2,772: 2,774 tokens read from the token cache {file}\n"
    )


def test_encoding_a_long_part_shows_a_line_at_each_tenth(corpus, cache, monkeypatch, capsys):
    monkeypatch.setattr(tc, "SHOWN_CHARS", 100)
    train, _ = splits(corpus)
    token_file(train.part, trained("char", train), progress="lines")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10 and lines[0].startswith("encoding corpus.txt: ")
    assert lines[-1].startswith("encoding corpus.txt: 2,772/2,772 characters (100%), done in ")


def test_a_changed_file_or_another_tokenizer_gets_a_new_token_file(corpus, cache, encodings):
    train, _ = splits(corpus)
    char = trained("char", train)
    token_file(train.part, char)
    corpus.write_bytes(TEXT.replace("nobler", "braver").encode("utf-8"))  # same size
    changed, _ = splits(corpus)
    tokens = token_file(changed.part, char)
    assert tokens.tolist() == char.encode(changed.examples[0], add_bos=True, add_eos=True)
    word = trained("word", changed)
    assert token_file(changed.part, word).tolist() == word.encode(
        changed.examples[0], add_bos=True, add_eos=True
    )
    assert len(encodings) == 3 and len(stored(cache)) == 3


def test_a_file_edited_while_it_is_encoded_is_refused_and_leaves_nothing(corpus, cache):
    train, _ = splits(corpus)
    tokenizer = trained("char", train)
    editing = get_tokenizer("char").train(list(train.texts()))

    def encode_and_edit(text, **kw):
        with corpus.open("a") as f:
            f.write("x")
        return tokenizer.encode(text, **kw)

    editing.encode = encode_and_edit
    with pytest.raises(ValueError, match=rf"^file '{corpus}' changed while it was encoded: "):
        token_file(train.part, editing)
    assert stored(cache) == []


def test_a_half_written_token_file_is_never_read_and_stale_ones_are_deleted(
    corpus, cache, encodings
):
    train, _ = splits(corpus)
    tokenizer = trained("char", train)
    failing = get_tokenizer("char").train(list(train.texts()))
    calls = 0

    def encode_then_fail(text, **kw):  # dies after some pieces are written
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        return tokenizer.encode(text, **kw)

    failing.encode = encode_then_fail
    with pytest.raises(KeyboardInterrupt):
        token_file(train.part, failing)
    assert stored(cache) == []  # the temporary file went with the error

    # a writer killed outright (kill -9) leaves its temporary file: never read; deleted once
    # untouched for STALE_SECONDS, while a writer's recent one is left alone
    stale, recent = cache / ".0123.uint16.dead.tmp", cache / ".4567.uint16.busy.tmp"
    stale.write_bytes(b"\x01\x00" * 5)
    recent.write_bytes(b"\x01\x00" * 5)
    old = time.time() - tc.STALE_SECONDS - 10
    os.utime(stale, (old, old))
    tokens = token_file(train.part, tokenizer)
    assert len(encodings) == 2 and len(tokens) == 2774
    assert sorted(p.name for p in stored(cache)) == sorted(
        [recent.name, f"{tc._key(train.part, tokenizer, True)}.uint16"]
    )


@pytest.mark.parametrize("damage", [b"\x01\x00\x05", b"\x01\x00\x05\x00"])
def test_a_damaged_token_file_is_encoded_again(damage, corpus, cache, encodings):
    train, _ = splits(corpus)
    tokenizer = trained("char", train)
    tokens = token_file(train.part, tokenizer).tolist()
    [file] = stored(cache)
    file.write_bytes(damage)  # half an id; or ids without the closing <EOS>
    assert token_file(train.part, tokenizer).tolist() == tokens
    assert len(encodings) == 2 and file.stat().st_size == 2 * len(tokens)


def test_a_full_disk_keeps_the_tokens_in_memory_with_a_note(corpus, cache, monkeypatch, capsys):
    train, _ = splits(corpus)
    tokenizer = trained("char", train)

    def full(tmp, encode):  # the disk fills after some tokens
        tmp.write_bytes(b"\x01\x00" * 3)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tc, "_write_tokens", full)
    with pytest.warns(tc.CacheNote) as notes:
        tokens = token_file(train.part, tokenizer)
    assert tokens.tolist() == tokenizer.encode(train.examples[0], add_bos=True, add_eos=True)
    assert stored(cache) == []
    assert [str(n.message) for n in notes] == [
        f"the token cache {cache} cannot be written (No space left on device); the tokens of "
        "corpus.txt are kept in memory for this run"
    ]
    assert capsys.readouterr().err == ""  # the library prints nothing: the caller shows it


def test_the_smallest_type_that_holds_the_ids():
    assert token_dtype(300) == np.uint16 and token_dtype(65_536) == np.uint16
    assert token_dtype(65_537) == np.uint32 and token_dtype(200_000) == np.uint32


def test_the_cache_folder_is_the_setting_else_the_variable_else_the_users_cache(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(tc.CACHE_ENV, str(tmp_path / "env"))
    assert cache_folder(str(tmp_path / "set")) == tmp_path / "set"
    assert cache_folder() == tmp_path / "env"
    monkeypatch.delenv(tc.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder() == tmp_path / "xdg" / "glassformer" / "tokens"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_folder() == tmp_path / ".cache" / "glassformer" / "tokens"


def test_the_data_cache_setting_names_the_folder_and_is_checked(corpus, cache, tmp_path):
    train = load_dataset(str(corpus), task="lm", cache=str(tmp_path / "mine"))
    assert train.part == TextPart(str(corpus), 0, 3080, str(tmp_path / "mine"))
    token_file(train.part, trained("char", train))
    assert len(stored(tmp_path / "mine")) == 1 and not cache.exists()
    with pytest.raises(ValueError, match=r"^cache is 3: allowed the path of a folder"):
        load_dataset(str(corpus), task="lm", cache=3)


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_batches_from_the_token_file_equal_those_of_the_text_in_memory(task, corpus, cache):
    train, validation = splits(corpus)
    tokenizer = trained("bpe", train)
    for dataset, shuffle in ((train, True), (validation, False)):
        options = {"max_len": 16, "batch_size": 4, "seed": 3, "shuffle": shuffle}
        streams = [
            BatchStream.for_task(data, tokenizer, task, **options, drop_last=shuffle)
            for data in (dataset, dataclasses.replace(dataset, part=None))
        ]
        assert isinstance(streams[0].dataset, PackedWindows)
        assert len(streams[0]) == len(streams[1])
        for k in range(2 * len(streams[0]) + 1):  # into the third epoch
            a, b = (s.batch(k) for s in streams)
            assert a.keys() == b.keys()
            assert all(torch.equal(a[key], b[key]) for key in a)


def test_windows_of_a_stream():
    windows = PackedWindows(np.arange(10, dtype=np.uint16), 4)
    assert len(windows) == 3
    assert [windows[i]["input_ids"].tolist() for i in range(3)] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]
    ]  # fmt: skip
    assert windows[-1]["input_ids"].dtype == torch.long
    with pytest.raises(IndexError):
        windows[3]
