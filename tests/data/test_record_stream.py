"""Records read as a stream (glassformer/data/record_stream.py, two_columns.py): the examples,
lines and tokens of reading the file whole, memory that does not grow with the file, a second
run that reads no record, gzip decompressed as it is read, counts and lock files of the cache."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import time
import tracemalloc

import pytest

import glassformer.data.documents as documents
import glassformer.data.record_cache as rc
import glassformer.data.record_digest as record_digest
import glassformer.data.record_files as record_files
import glassformer.data.text_lines as text_lines
import glassformer.data.text_scan as text_scan
from glassformer.data import TextDataset, load_dataset
from glassformer.data.cache_lock import remove_stale
from glassformer.data.formats.records import FormatRows
from glassformer.data.token_cache import CACHE_ENV
from glassformer.data.two_columns import TwoColumnRows
from glassformer.tokenizers import get_tokenizer

WORDS = ["free", "prize", "call", "now", "ok", "see", "you", "later", "thanks", "caf\u00e9"]


def text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(1 + i * 5 % 12))


def write(path, n: int, task: str = "classification"):
    """``n`` records of ``task`` in the format of the path's name (.tsv, .jsonl, ... .gz)."""
    rows = [("spam" if i % 3 == 0 else "ham", text(i)) for i in range(n)]
    if task == "seq2seq":
        rows = [(text(i), text(i + 1)[::-1]) for i in range(n)]
    keys = ("label", "text") if task == "classification" else ("source", "target")
    name = path.name.removesuffix(".gz")
    if name.endswith(".jsonl"):
        data = "".join(json.dumps(dict(zip(keys, r, strict=True))) + "\n" for r in rows)
    else:
        data = "\t".join(keys) + "\n" + "".join(f"{a}\t{b}\n" for a, b in rows)
    raw = data.encode("utf-8")
    path.write_bytes(gzip.compress(raw) if path.name.endswith(".gz") else raw)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "tokens"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    monkeypatch.setattr(rc, "CACHE_CHARS", 0)
    monkeypatch.setattr(rc, "ENCODE_CHARS", 300)
    monkeypatch.setattr(record_digest, "HASH_RECORDS", 16)
    monkeypatch.setattr(record_files, "CHECK_RECORDS", 500)
    monkeypatch.setattr(documents, "READ_BYTES", 4096)
    return folder


def held(dataset):
    """The same split held in memory: examples, labels and lines as lists."""
    return TextDataset(
        dataset.name, dataset.task, dataset.split, list(dataset.examples), labels=dataset.labels,
        description=dataset.description, lines=list(dataset.lines), unit=dataset.unit,
    )  # fmt: skip


def as_lists(tokens):
    found = {f: (ids.tolist(), offsets.tolist()) for f, (ids, offsets) in tokens.fields.items()}
    return {**found, "labels": None if tokens.labels is None else tokens.labels.tolist()}


@pytest.mark.parametrize("name", ["sms.tsv", "sms.csv.gz", "sms.jsonl", "pairs.tsv.gz"])
def test_a_streamed_split_is_the_split_read_whole(tmp_path, cache, name):
    task = "seq2seq" if name.startswith("pairs") else "classification"
    path = write(tmp_path / name, 95, task)
    if name.endswith(".csv.gz"):
        path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()).replace(b"\t", b",")))
    tokenizer = get_tokenizer("char").train([" ".join(WORDS) + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"])
    for split in ("train", "validation"):
        streamed = load_dataset(path, split, task=task, val_fraction=0.1)
        whole = held(streamed)
        assert len(streamed) == (9 if split == "validation" else 86)
        assert streamed == whole and list(streamed.lines) == list(whole.lines)
        assert [streamed.where(i) for i in (0, 5)] == [whole.where(i) for i in (0, 5)]
        assert list(streamed.texts()) == list(whole.texts())
        assert rc._key(streamed, tokenizer, True) == rc._key(whole, tokenizer, True)
        a = as_lists(rc.record_tokens(streamed, tokenizer))
        b = as_lists(rc.record_tokens(whole, tokenizer, add_bos=True))
        assert a == b


def test_memory_does_not_grow_with_the_file(tmp_path, cache):
    tokenizer = get_tokenizer("char").train([" ".join(WORDS)])
    peaks = {}
    for n in (2_000, 20_000):
        path = write(tmp_path / f"sms-{n}.tsv", n)
        tracemalloc.start()
        try:
            dataset = load_dataset(path, task="classification", val_fraction=0.1, workers=1)
            tokens = rc.record_tokens(dataset, tokenizer, workers=1)
            _, peaks[n] = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(tokens) == n - n // 10
    # held whole, 20,000 records took about 10 times the memory of 2,000
    assert peaks[20_000] < 1.5 * peaks[2_000], peaks


def test_a_second_run_reads_no_record(tmp_path, cache, monkeypatch):
    tokenizer = get_tokenizer("char").train([" ".join(WORDS)])
    paths = [write(tmp_path / "sms.tsv.gz", 60), write(tmp_path / "sms.jsonl", 60)]
    first = [load_dataset(p, task="classification", val_fraction=0.1) for p in paths]
    expected = [as_lists(rc.record_tokens(d, tokenizer)) for d in first]

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read")

    for reader in (TwoColumnRows, FormatRows):
        monkeypatch.setattr(reader, "rows", no_reading)
    monkeypatch.setattr(text_scan, "_scan", no_reading)
    again = [load_dataset(p, task="classification", val_fraction=0.1) for p in paths]
    assert again == first and [a.labels for a in again] == [("ham", "spam")] * 2
    assert [as_lists(rc.record_tokens(d, tokenizer)) for d in again] == expected


def test_a_file_changed_before_it_is_encoded_is_refused(tmp_path, cache):
    path = write(tmp_path / "sms.tsv", 60)
    dataset = load_dataset(path, task="classification")
    path.write_text(path.read_text().replace("prize", "prise"))
    tokenizer = get_tokenizer("char").train([" ".join(WORDS) + "s"])
    with pytest.raises(ValueError) as err:
        rc.record_tokens(dataset, tokenizer)
    assert str(err.value) == (
        f"file {str(path)!r} changed while it was encoded: allowed a file that stays the same "
        "while a run reads it"
    )
    assert not list(cache.glob("*.records"))


@pytest.mark.parametrize("name", ["sms.tsv.gz", "sms.csv.gz", "notes.txt.gz"])
def test_a_gzip_file_cut_short_is_refused_in_one_line(tmp_path, cache, name):
    path = write(tmp_path / name, 3000)
    path.write_bytes(path.read_bytes()[:-40])
    task = "lm" if name.startswith("notes") else "classification"
    options = {"one_per_line": True} if task == "lm" else {}
    with pytest.raises(ValueError) as err:
        load_dataset(path, task=task, **options)
    assert str(err.value) == (
        f"file {str(path)!r}: the compressed data end early (the file is cut short): allowed a "
        "whole gzip file"
    )


def test_gzipped_lines_stream_and_their_counts_are_kept(tmp_path, cache, monkeypatch):
    lines = "".join(f"{text(i)}\n" + ("\n" if i % 4 == 0 else "") for i in range(500))
    plain, packed = tmp_path / "notes.txt", tmp_path / "notes.txt.gz"
    plain.write_text(lines)
    packed.write_bytes(gzip.compress(lines.encode()))
    for split in ("train", "validation"):
        a, b = (
            load_dataset(p, split, one_per_line=True, val_fraction=0.1) for p in (plain, packed)
        )
        assert (len(a), list(a), list(a.lines), a.part.chars) == (
            len(b), list(b), list(b.lines), b.part.chars
        )  # fmt: skip

    def no_counting(*args, **kwargs):
        raise AssertionError("the lines were counted again")

    monkeypatch.setattr(text_lines.LineDocuments, "lines", no_counting)
    again = load_dataset(packed, "validation", one_per_line=True, val_fraction=0.1)
    assert (len(again), again.part.chars) == (len(b), b.part.chars)


def test_a_killed_writers_lock_file_is_removed_and_a_held_one_kept(tmp_path):
    dead, held_lock = tmp_path / "a.lock", tmp_path / "b.lock"
    dead.touch()
    held_lock.touch()
    old = time.time() - 100
    for path in (dead, held_lock):
        os.utime(path, (old, old))
    fd = os.open(held_lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert not remove_stale(dead, 1000)  # too recent
        assert remove_stale(dead, 10) and not dead.exists()
        assert not remove_stale(held_lock, 10) and held_lock.exists()
    finally:
        os.close(fd)
