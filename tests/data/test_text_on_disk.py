"""An lm text file read without holding its text (glassformer/data/on_disk.py, text_lines.py):
its examples are read from disk when asked, a tokenizer trains on its pieces as they are read
(to the vocabulary of the whole text), and the lines of a one_per_line file are documents of
the token cache, batched as the lines in memory are."""

from __future__ import annotations

import dataclasses
import random
import tracemalloc

import pytest
import torch

import glassformer.data.documents as documents
import glassformer.data.text_pieces as text_pieces
import glassformer.data.token_cache as tc
from glassformer.data import LMDataset, load_dataset
from glassformer.data.encoding import PackedWindows
from glassformer.data.on_disk import OnDisk
from glassformer.data.token_cache import token_file
from glassformer.runs.summary import held_out
from glassformer.tokenizers import get_tokenizer
from glassformer.training.batches import BatchStream

TRAINING = {"char": {}, "word": {}, "bpe": {"vocab_size": 300}}
WORDS = ["the", "of", "and", "to", "a", "in", "that", "is", "was", "he", "for", "it", "with"]


def english(n_lines: int, seed: int = 0) -> str:
    """Lines of 3 to 15 words, some blank, some with two spaces or a tab, a few accents."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 15))]
        if rng.random() < 0.1:
            words[0] = "Caf\u00e9\u00a0s" if rng.random() < 0.5 else "  \t"
        lines.append(" ".join(words).capitalize() + ("." if rng.random() < 0.8 else "\n"))
    return "\n".join(lines) + "\n"


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks read, pieces trained on and pieces encoded of 16 Ki, so that a file of a few
    MB is many of them."""
    monkeypatch.setattr(documents, "READ_BYTES", 1 << 14)
    monkeypatch.setattr(text_pieces, "PIECE_CHARS", 1 << 14)
    monkeypatch.setattr(tc, "ENCODE_CHARS", 1 << 14)


@pytest.mark.parametrize("kind", ["char"])
def test_a_file_is_read_trained_on_and_encoded_without_holding_its_text(
    kind, tmp_path, small_blocks
):
    block = english(2000)
    path, small = tmp_path / "big.txt", tmp_path / "small.txt"
    small.write_text(block, encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        for _ in range(repeats := 8_000_000 // len(block) + 1):  # about 8 MB
            f.write(block)
    size = path.stat().st_size

    def read_train_encode(path):
        train = load_dataset(path, task="lm", val_fraction=0.1)
        tokenizer = get_tokenizer(kind).train(train.texts(), **TRAINING[kind])
        return train, token_file(train.part, tokenizer)

    read_train_encode(small)  # modules imported, caches filled
    tracemalloc.start()
    try:
        train, tokens = read_train_encode(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # holding the text took 3.5 (char) and 12.8 (bpe) times the file's size at its peak
    assert size > 8_000_000 and peak < size / 10, (peak, size)
    n = len(block) * repeats
    assert train.part.chars == n - n // 10 and tokens[0] == 1 and tokens[-1] == 2
    assert len(tokens) == train.part.chars + 2 if kind == "char" else len(tokens) > size / 8


def test_the_examples_are_read_only_when_asked(tmp_path, monkeypatch):
    text = english(300)
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    train, val = (load_dataset(path, s, val_fraction=0.1) for s in ("train", "validation"))
    lines = [
        load_dataset(path, s, val_fraction=0.1, one_per_line=True) for s in ("train", "validation")
    ]
    again = load_dataset(path, "validation", val_fraction=0.1)

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(documents, "read_chars", no_reading)
    assert val == again and val != train and hash(val) == hash(again)
    assert (
        repr(val) == f"TextDataset(name={str(path)!r}, task='lm', split='validation', 1 examples)"
    )
    assert repr(val.examples) == (
        f"OnDisk(1 texts of notes.txt, characters {train.part.end:,}..{len(text):,})"
    )
    assert (len(train), len(val), val.lines) == (1, 1, (text.count("\n", 0, train.part.end) + 1,))
    assert val.where(0) == f"file {str(path)!r}, line {val.lines[0]}"
    plan = dataclasses.make_dataclass("Plan", ["data", "validation", "data_options"])
    held = held_out(plan(str(path), str(path), {"val_fraction": 0.1}), val)
    assert held == {"file": "notes.txt", "fraction": 0.1, "unit": "characters",
                    "count": len(text) // 10, "spread": False}  # fmt: skip
    n = len([line for line in text.split("\n") if line.strip()])
    assert [len(d) for d in lines] == [n - n // 10, n // 10]
    monkeypatch.undo()

    assert train[0] + val[0] == text and val.examples == (text[train.part.end :],)
    assert list(val.examples) == [val[-1]] and val.examples[:5] == (val[0],)
    with pytest.raises(IndexError):
        val.examples[1]


@pytest.mark.parametrize("kind", sorted(TRAINING))
def test_a_tokenizer_trained_on_the_pieces_is_the_one_trained_on_the_whole_text(
    kind, tmp_path, monkeypatch
):
    monkeypatch.setattr(documents, "READ_BYTES", 97)
    monkeypatch.setattr(text_pieces, "PIECE_CHARS", 211)
    text = english(400)
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    train = load_dataset(path, val_fraction=0.1)
    pieces = list(train.texts())
    assert len(pieces) > 30 and "".join(pieces) == train[0]
    whole = get_tokenizer(kind).train([train[0]], **TRAINING[kind])
    streamed = get_tokenizer(kind).train(train.texts(), **TRAINING[kind])
    assert streamed.to_dict() == whole.to_dict() and whole.vocab_size > 20


def test_one_per_line_lines_are_read_as_the_lines_in_memory_were(tmp_path):
    text = "\ufeffemma\r\n  \nolivia\r\n\n" + "".join(f"name {i}\n" for i in range(40)) + "ava"
    path = tmp_path / "names.txt"
    path.write_bytes(text.encode("utf-8"))
    rows = [(n, line) for n, line in enumerate(text[1:].replace("\r\n", "\n").split("\n"), 1)]
    rows = [(n, line) for n, line in rows if line.strip()]  # what the whole text gave
    val = load_dataset(path, "validation", one_per_line=True, val_fraction=0.1)
    train = load_dataset(path, one_per_line=True, val_fraction=0.1)
    every = load_dataset(path, one_per_line=True)
    assert every.examples == tuple(line for _, line in rows) and every.lines == tuple(
        n for n, _ in rows
    )
    assert val.examples == tuple(rows[i][1] for i in range(9, 43, 10))  # every tenth line
    assert val.lines == tuple(rows[i][0] for i in range(9, 43, 10)) == (12, 22, 32, 42)
    assert (
        len(train) + len(val) == len(every) == 43 and val.where(1) == f"file {str(path)!r}, line 22"
    )
    assert train.part.chars == sum(map(len, train.examples))
    nine = tmp_path / "nine.txt"
    nine.write_text("".join(f"n{i}\n\n" for i in range(9)))
    with pytest.raises(ValueError) as e:
        load_dataset(nine, one_per_line=True, val_fraction=0.1)
    assert str(e.value).startswith(
        f"file {str(nine)!r}: 9 lines are too few to hold out val_fraction=0.1 for validation"
    )


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_batches_of_one_per_line_lines_from_the_token_file_equal_those_in_memory(
    task, tmp_path, monkeypatch
):
    monkeypatch.setattr(documents, "READ_BYTES", 13)
    path = tmp_path / "lines.txt"
    path.write_text(english(200), encoding="utf-8")
    train, val = (
        load_dataset(path, s, one_per_line=True, val_fraction=0.1) for s in ("train", "validation")
    )
    tokenizer = get_tokenizer("bpe").train(train.texts(), vocab_size=300)
    tokens = token_file(train.part, tokenizer)
    assert tokens.tolist() == LMDataset(list(train.examples), tokenizer, 10**9).stream.tolist()
    for dataset, shuffle in ((train, True), (val, False)):
        options = {"max_len": 16, "batch_size": 4, "seed": 3, "shuffle": shuffle}
        in_memory = dataclasses.replace(
            dataset, examples=tuple(dataset.examples), lines=(), part=None
        )
        streams = [
            BatchStream.for_task(data, tokenizer, task, **options, drop_last=shuffle)
            for data in (dataset, in_memory)
        ]
        assert isinstance(streams[0].dataset, PackedWindows)
        assert isinstance(streams[1].dataset, LMDataset) and len(streams[0]) == len(streams[1])
        for k in range(2 * len(streams[0]) + 1):  # into the third epoch
            a, b = (s.batch(k) for s in streams)
            assert a.keys() == b.keys()
            assert all(torch.equal(a[key], b[key]) for key in a)


def test_a_sequence_on_disk_names_what_it_holds():
    with pytest.raises(ValueError, match="what is 'words': allowed 'texts', 'lines'"):
        OnDisk(documents.TextPart("x.txt", 0, 1), "words")
