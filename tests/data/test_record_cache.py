"""Records in the token cache (glassformer/data/record_cache.py, record_dataset.py): a seq2seq or
classification split is encoded once into flat token files with offsets, and its items and
batches are exactly those of encoding it in memory (Seq2SeqDataset, ClassificationDataset)."""

from __future__ import annotations

import dataclasses
import errno
import os
import time

import numpy as np
import pytest
import torch

import glassformer.data.record_cache as rc
import glassformer.data.record_digest as record_digest
from glassformer.data import (
    ClassificationDataset,
    Seq2SeqDataset,
    TextDataset,
    encode_dataset,
    load_dataset,
)
from glassformer.data.record_dataset import RecordDataset
from glassformer.data.token_cache import CACHE_ENV, CacheNote
from glassformer.tokenizers import get_tokenizer
from glassformer.training.batches import BatchStream

WORDS = ["free", "prize", "call", "now", "ok", "see", "you", "later", "thanks", "love", "caf\u00e9"]
TRAINING = {"char": {}, "bpe": {"vocab_size": 300}}


def text(i: int) -> str:
    """Texts of 1 to 12 words."""
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(1 + i * 5 % 12))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of the test's own; every split goes through it, encoded and hashed a few
    records at a time."""
    folder = tmp_path / "tokens"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    monkeypatch.setattr(rc, "CACHE_CHARS", 0)
    monkeypatch.setattr(rc, "ENCODE_CHARS", 200)
    monkeypatch.setattr(record_digest, "HASH_RECORDS", 7)
    return folder


@pytest.fixture
def encodings(monkeypatch):
    """How many times records were encoded."""
    calls = []
    encode = rc._encode
    monkeypatch.setattr(rc, "_encode", lambda ds, *a: (calls.append(ds.name), encode(ds, *a)))
    return calls


@pytest.fixture
def sms(tmp_path):
    path = tmp_path / "sms.tsv"
    rows = [("spam" if i % 3 == 0 else "ham", text(i)) for i in range(60)]
    path.write_text("label\ttext\n" + "".join(f"{label}\t{t}\n" for label, t in rows))
    return path


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{text(i)}\t{text(i)[::-1]}\n" for i in range(60)))
    return path


def written(cache):
    """What the cache folder holds besides the scans of the files read (scans/)."""
    return sorted(p for p in cache.iterdir() if p.name != "scans")


def trained(kind, dataset):
    return get_tokenizer(kind).train(list(dataset.texts()), **TRAINING[kind])


def in_memory(dataset, tokenizer, max_len, overflow):
    if dataset.task == "seq2seq":
        return Seq2SeqDataset(
            dataset.examples, tokenizer, max_len, overflow=overflow, where=dataset.where
        )
    return ClassificationDataset(
        dataset.examples,
        dataset.labels,
        tokenizer,
        max_len,
        overflow=overflow,
        where=dataset.where,
    )


def assert_same_items(a, b):
    assert len(a) == len(b)
    for i in range(len(a)):
        x, y = a[i], b[i]
        assert x.keys() == y.keys() == {"input_ids", "labels"}
        for key in x:
            assert x[key].dtype == y[key].dtype == torch.long
            assert torch.equal(x[key], y[key])


@pytest.mark.parametrize("kind", sorted(TRAINING))
@pytest.mark.parametrize("task", ["seq2seq", "classification"])
def test_items_and_counts_equal_those_of_encoding_in_memory(
    task, kind, sms, pairs, cache, encodings
):
    dataset = load_dataset(pairs if task == "seq2seq" else sms, task=task)
    tokenizer = trained(kind, dataset)
    for max_len in (6, 9, 30, 200):
        for overflow in ("truncate", "drop"):
            cached = encode_dataset(dataset, tokenizer, max_len=max_len, overflow=overflow)
            assert isinstance(cached, RecordDataset)
            memory = in_memory(dataset, tokenizer, max_len, overflow)
            assert (cached.num_truncated, cached.num_dropped) == (
                memory.num_truncated,
                memory.num_dropped,
            )
            assert_same_items(cached, memory)
            if max_len == 9:
                assert cached.num_truncated + cached.num_dropped > 10  # something was cut
    assert encodings == [str(pairs if task == "seq2seq" else sms)]  # once for every max_len
    [folder] = written(cache)
    fields = ["source", "target"] if task == "seq2seq" else ["text"]
    expected = {f"{f}.{suffix}" for f in fields for suffix in ("uint16", "offsets.int64")}
    if task == "classification":
        expected.add("labels.int32")
    assert folder.suffix == ".records" and {p.name for p in folder.iterdir()} == expected


@pytest.mark.parametrize("task", ["seq2seq", "classification"])
def test_an_over_long_record_is_refused_with_the_message_of_encoding_in_memory(
    task, sms, pairs, cache
):
    dataset = load_dataset(pairs if task == "seq2seq" else sms, task=task)
    tokenizer = trained("char", dataset)
    with pytest.raises(ValueError) as expected:
        in_memory(dataset, tokenizer, 9, "error")
    with pytest.raises(ValueError) as found:
        encode_dataset(dataset, tokenizer, max_len=9)
    assert str(found.value) == str(expected.value)
    assert str(found.value).startswith(f"file {str(dataset.name)!r}, line ")
    # every record too long and dropped: the same message as in memory
    with pytest.raises(ValueError) as expected:
        in_memory(dataset, tokenizer, 2, "drop")
    with pytest.raises(ValueError) as found:
        encode_dataset(dataset, tokenizer, max_len=2, overflow="drop")
    assert str(found.value) == str(expected.value)
    assert str(found.value).startswith("all 60 examples (the first: file ")


@pytest.mark.parametrize("task", ["seq2seq", "classification"])
def test_batches_equal_those_of_encoding_in_memory(task, sms, pairs, cache, monkeypatch):
    train = load_dataset(
        pairs if task == "seq2seq" else sms, task=task, val_fraction=0.1, overflow="truncate"
    )
    tokenizer = trained("bpe", train)
    options = {"max_len": 12, "batch_size": 5, "seed": 3, "shuffle": True, "drop_last": True}
    name = "seq2seq" if task == "seq2seq" else "classify"
    cached = BatchStream.for_task(train, tokenizer, name, **options)
    monkeypatch.setattr(rc, "CACHE_CHARS", 10**9)  # in memory, as small splits are
    memory = BatchStream.for_task(train, tokenizer, name, **options)
    assert isinstance(cached.dataset, RecordDataset)
    assert not isinstance(memory.dataset, RecordDataset)
    assert len(cached) == len(memory) == 10
    for k in range(2 * len(cached) + 1):  # into the third epoch
        a, b = cached.batch(k), memory.batch(k)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[key], b[key]) for key in a)


def test_the_key_is_the_records_the_class_list_and_the_tokenizer(sms, cache, encodings):
    from_file = load_dataset(sms, task="classification")
    tokenizer = trained("char", from_file)
    encode_dataset(from_file, tokenizer, max_len=64)
    built = TextDataset(
        "mine", "classification", "train", from_file.examples, labels=("ham", "spam")
    )
    assert_same_items(
        encode_dataset(built, tokenizer, max_len=64),
        encode_dataset(from_file, tokenizer, max_len=64),
    )
    assert len(encodings) == 1  # the same records, however they were read
    more = dataclasses.replace(from_file, labels=("eggs", "ham", "spam"))
    assert encode_dataset(more, tokenizer, max_len=64)[0]["labels"].tolist() == 2
    other = trained("bpe", from_file)
    encode_dataset(from_file, other, max_len=64)
    edited = [(label, t.replace("free", "fre")) for label, t in from_file.examples]
    encode_dataset(dataclasses.replace(from_file, examples=edited), tokenizer, max_len=64)
    assert len(encodings) == 4 and len(written(cache)) == 4
    moved = [("ab", "c"), ("a", "bc")]  # the same characters, split otherwise
    keys = {
        rc._key(TextDataset("t", "seq2seq", "train", [pair]), tokenizer, False) for pair in moved
    }
    assert len(keys) == 2


def test_small_splits_stay_in_memory_and_large_files_use_the_cache(sms, cache, monkeypatch):
    monkeypatch.setattr(rc, "CACHE_CHARS", 1 << 20)
    small = load_dataset("reverse")  # 10,000 pairs of a few characters
    tokenizer = trained("char", small)
    assert isinstance(encode_dataset(small, tokenizer, max_len=32), Seq2SeqDataset)
    rows = "".join(f"{'ham' if i % 2 else 'spam'}\t{text(i) * 3}\n" for i in range(20_000))
    big = sms.with_name("big.tsv")
    big.write_text(rows)  # 20,000 rows, 1.9 million characters
    mine = str(cache.parent / "mine")
    dataset = load_dataset(big, task="classification", cache=mine, overflow="truncate")
    assert rc.record_chars(dataset) > 1 << 20
    encoded = encode_dataset(dataset, trained("char", dataset), max_len=128)
    assert isinstance(encoded, RecordDataset) and len(encoded) == 20_000
    assert not cache.exists() and len(written(cache.parent / "mine")) == 1


def test_progress_while_encoding_and_one_line_on_a_hit(sms, cache, monkeypatch, capsys):
    monkeypatch.setattr(rc, "SHOWN_CHARS", 100)
    monkeypatch.setattr(rc, "ENCODE_CHARS", 1)  # a record at a time
    dataset = load_dataset(sms, task="classification")
    tokenizer = trained("char", dataset)
    encode_dataset(dataset, tokenizer, max_len=64, progress="lines")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10 and lines[0].startswith("encoding sms.tsv (train): ")
    assert lines[-1].startswith("encoding sms.tsv (train): 60/60 records (100%), done in ")
    encode_dataset(dataset, tokenizer, max_len=64, progress="lines")
    [folder] = written(cache)
    tokens = sum(len(tokenizer.encode(t)) + 2 for _, t in dataset.examples)
    assert capsys.readouterr().err == (
        f"sms.tsv (train): 60 records, {tokens:,} tokens read from the token cache {folder}\n"
    )


@pytest.mark.parametrize(
    "damage",
    ["cut", "missing", "offsets", "eos", "label"],
)
def test_a_damaged_record_folder_is_encoded_again(damage, pairs, sms, cache, encodings):
    task = "classification" if damage == "label" else "seq2seq"
    dataset = load_dataset(sms if task == "classification" else pairs, task=task)
    tokenizer = trained("char", dataset)
    expected = [encode_dataset(dataset, tokenizer, max_len=64)[i] for i in range(len(dataset))]
    [folder] = written(cache)
    if damage == "cut":  # half an id at the end
        path = folder / "target.uint16"
        path.write_bytes(path.read_bytes()[:-1])
    elif damage == "missing":
        (folder / "source.offsets.int64").unlink()
    elif damage == "offsets":  # two records' ends swapped
        offsets = np.fromfile(folder / "target.offsets.int64", dtype=np.int64)
        offsets[[3, 4]] = offsets[[4, 3]]
        offsets.tofile(folder / "target.offsets.int64")
    elif damage == "eos":  # a record that does not end with <EOS>
        ids = np.fromfile(folder / "source.uint16", dtype=np.uint16)
        ids[ids == tokenizer.eos_id] = 0
        ids[-1] = tokenizer.eos_id
        ids.tofile(folder / "source.uint16")
    else:  # a class index out of range
        labels = np.fromfile(folder / "labels.int32", dtype=np.int32)
        labels[5] = 2
        labels.tofile(folder / "labels.int32")
    again = encode_dataset(dataset, tokenizer, max_len=64)
    assert len(encodings) == 2
    assert_same_items(again, expected)


def test_a_half_written_folder_is_never_read_and_stale_ones_are_deleted(
    pairs, cache, encodings, monkeypatch
):
    dataset = load_dataset(pairs, task="seq2seq")
    tokenizer = trained("char", dataset)
    failing = trained("char", dataset)
    calls = 0

    def encode_then_fail(texts, **kw):  # dies after some chunks are written
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        return tokenizer.encode_batch(texts, **kw)

    failing.encode_batch = encode_then_fail
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(dataset, failing, max_len=64)
    assert written(cache) == []  # the temporary folder went with the error

    # a writer killed outright (kill -9) leaves its temporary folder: never read; deleted once
    # nothing in it was written for STALE_SECONDS, while a writer's recent one is left alone
    stale, recent = cache / ".0123.records.dead", cache / ".4567.records.busy"
    for folder in (stale, recent):
        folder.mkdir()
        (folder / "source.uint16").write_bytes(b"\x01\x00" * 5)
    old = time.time() - rc.STALE_SECONDS - 10
    os.utime(stale / "source.uint16", (old, old))
    os.utime(stale, (old, old))
    encoded = encode_dataset(dataset, tokenizer, max_len=64)
    assert len(encodings) == 2 and len(encoded) == 60
    assert [p.name for p in written(cache)] == sorted(
        [recent.name, f"{rc._key(dataset, tokenizer, False)}.records"]
    )


def test_a_full_disk_keeps_the_records_in_memory_with_a_note(pairs, cache, monkeypatch, capsys):
    dataset = load_dataset(pairs, task="seq2seq")
    tokenizer = trained("char", dataset)

    def full(folder, encode):  # the disk fills after some tokens
        (folder / "source.uint16").write_bytes(b"\x01\x00" * 3)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rc, "_write_files", full)
    with pytest.warns(CacheNote) as notes:
        encoded = encode_dataset(dataset, tokenizer, max_len=9, overflow="truncate")
    assert_same_items(encoded, in_memory(dataset, tokenizer, 9, "truncate"))
    assert written(cache) == []
    assert [str(n.message) for n in notes] == [
        f"the token cache {cache} cannot be written (No space left on device); the tokens of "
        "pairs.tsv (train) are kept in memory for this run"
    ]
    assert capsys.readouterr().err == ""  # the library prints nothing: the caller shows it


def test_the_files_hold_every_records_untruncated_ids_and_offsets(sms, pairs, cache):
    for path, task in ((sms, "classification"), (pairs, "seq2seq")):
        dataset = load_dataset(path, task=task)
        tokenizer = trained("bpe", dataset)
        tokens = rc.record_tokens(dataset, tokenizer, progress="bar")
        assert len(tokens) == 60
        for column, field in enumerate(rc.FIELDS[task], 2 - len(rc.FIELDS[task])):
            ids = [
                tokenizer.encode(example[column], add_bos=task != "seq2seq", add_eos=True)
                for example in dataset
            ]
            flat, offsets = tokens.fields[field]
            assert isinstance(flat, np.memmap) and flat.dtype == np.uint16
            assert flat.tolist() == [i for record in ids for i in record]
            assert offsets.tolist() == np.cumsum([0, *map(len, ids)]).tolist()
        if task == "classification":
            assert tokens.labels.tolist() == [dataset.label_id(label) for label, _ in dataset]
