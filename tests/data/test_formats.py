"""The formats users' data comes in (glassformer/data/formats/): JSON Lines, Parquet, a
datasets folder, a folder of .txt files and gzip-compressed text give, for every task, the
examples, labels and validation split of the same data written as .txt / .tsv; lm batches
from their token files equal those of the texts in memory; bad input is one line naming the
file, the record and what is allowed."""

from __future__ import annotations

import dataclasses
import gzip
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import glassformer.data.token_cache as tc
from glassformer.data import load_dataset
from glassformer.data.formats import data_digest, guess_kind
from glassformer.data.token_cache import token_file
from glassformer.tokenizers import get_tokenizer
from glassformer.training.batches import BatchStream

N = 23  # records: 2 held out at val_fraction 0.1 (records 10 and 20)
LABELLED = [("pos" if i % 3 else "neg", f"review {i}, quite good" * (1 + i % 2)) for i in range(N)]
PAIRS = [(f"src {i}", f"tgt {'x' * i}") for i in range(N)]
TEXTS = [f"document {i}: " + "the cat sat on the mat " * (1 + i % 4) for i in range(N)]
ROWS = {
    "classification": [{"label": a, "text": b} for a, b in LABELLED],
    "seq2seq": [{"source": a, "target": b} for a, b in PAIRS],
    "lm": [{"text": t} for t in TEXTS],
}
SPLITS = ("train", "validation")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(tc.CACHE_ENV, str(tmp_path / "tokens"))


def write_jsonl(path, rows, compress=False):
    data = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def write_parquet(path, rows, **kw):
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=5, **kw)
    return path


def write_datasets(path, rows):
    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return path


def write_reference(tmp_path, task):
    """The same data as today's formats: .tsv records, or lines of a .txt (lm)."""
    if task == "lm":
        path = tmp_path / "ref.txt"
        path.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
        return load_dataset, {"one_per_line": True}, path
    rows = LABELLED if task == "classification" else PAIRS
    path = tmp_path / "ref.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    return load_dataset, {}, path


def write_source(tmp_path, fmt, task):
    rows = ROWS[task]
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "data.jsonl", rows)
    if fmt == "jsonl.gz":
        return write_jsonl(tmp_path / "data.jsonl.gz", rows, compress=True)
    if fmt == "parquet":
        return write_parquet(tmp_path / "data.parquet", rows)
    if fmt == "datasets":
        return write_datasets(tmp_path / "saved", rows)
    if fmt == "folder":
        folder = tmp_path / "texts"
        folder.mkdir()
        for i, t in enumerate(TEXTS):  # 2-digit names sort as the records do
            (folder / f"{i:02d}.txt").write_text(t, encoding="utf-8")
        (folder / "notes.md").write_text("not a text file")
        (folder / ".hidden.txt").write_text("left out")
        return folder
    assert fmt == "gz"  # today's two-column file or lines, compressed
    _, _, ref = write_reference(tmp_path, task)
    path = tmp_path / (ref.name + ".gz")
    path.write_bytes(gzip.compress(ref.read_bytes()))
    return path


CASES = [
    (fmt, task)
    for task in ("classification", "seq2seq", "lm")
    for fmt in ("jsonl", "jsonl.gz", "parquet", "datasets", "gz")
] + [("folder", "lm")]


@pytest.mark.parametrize(("fmt", "task"), CASES)
def test_each_format_reads_as_the_same_data_written_as_text(tmp_path, fmt, task):
    source = write_source(tmp_path, fmt, task)
    _, options, ref = write_reference(tmp_path, task)
    if fmt == "gz" and task == "lm":
        options = {"one_per_line": True}
    elif fmt != "gz":
        options = {}
    assert guess_kind(source, {}) == (None if fmt == "gz" and task != "lm" else task)
    for split in SPLITS:
        got = load_dataset(source, split, task=task, val_fraction=0.1, **options)
        want = load_dataset(ref, split, task=task, val_fraction=0.1, **(
            {"one_per_line": True} if task == "lm" else {}))  # fmt: skip
        assert (got.task, got.split, got.labels) == (want.task, want.split, want.labels)
        assert tuple(got.examples) == want.examples
        assert len(got) == len(want) == (2 if split == "validation" else N - 2)
        if fmt in ("jsonl", "jsonl.gz", "gz") and task != "lm":
            assert got.lines == want.lines  # a JSON Lines record is named by its line
        if fmt in ("parquet", "datasets") and task != "lm":
            assert got.unit == "row" and got.lines == want.lines  # row i is line i there
            assert got.where(0).endswith(f", row {want.lines[0]}")


def test_a_gzipped_text_is_the_text_read_as_a_stream(tmp_path):
    text = "\ufeffTo be,\r\nor not to be: that is the qu\u00e9stion.\n" * 40
    plain, packed = tmp_path / "t.txt", tmp_path / "t.txt.gz"
    plain.write_bytes(text.encode("utf-8"))
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    for split in SPLITS:
        got, want = (load_dataset(p, split, val_fraction=0.1) for p in (packed, plain))
        assert tuple(got.examples) == want.examples and got.lines == want.lines
        assert (got.part.start, got.part.end) == (want.part.start, want.part.end)


def test_fields_are_named_by_settings_and_integer_labels_read_as_their_digits(tmp_path):
    rows = [{"id": i, "category": i % 2, "content": t} for i, (_, t) in enumerate(LABELLED)]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    options = {"text_field": "content", "label_field": "category"}
    assert guess_kind(path, {"text": "content", "label": "category"}) == "classification"
    data = load_dataset(path, **options)
    assert data.labels == ("0", "1")
    assert data.examples == tuple((str(r["category"]), r["content"]) for r in rows)
    lm = load_dataset(path, task="lm", text_field="content")
    assert tuple(lm.examples) == tuple(r["content"] for r in rows)


def test_a_class_label_column_of_a_datasets_folder_gives_its_names(tmp_path):
    import datasets

    features = datasets.Features(
        {"label": datasets.ClassLabel(names=["neg", "pos"]), "text": datasets.Value("string")}
    )
    rows = {"label": [i % 2 for i in range(N)], "text": [t for _, t in LABELLED]}
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(tmp_path / "s"))
    data = load_dataset(tmp_path / "s")
    assert data.labels == ("neg", "pos")
    assert [label for label, _ in data] == [["neg", "pos"][i % 2] for i in range(N)]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "datasets", "folder", "txt.gz"])
def test_lm_batches_from_the_token_file_equal_those_of_the_texts_in_memory(tmp_path, fmt):
    if fmt == "txt.gz":
        source = tmp_path / "t.txt.gz"
        source.write_bytes(gzip.compress("".join(t + "\n" for t in TEXTS).encode("utf-8")))
    else:
        source = write_source(tmp_path, fmt, "lm")
    train = load_dataset(source, task="lm", val_fraction=0.1)
    tokenizer = get_tokenizer("bpe").train(list(train.texts()), vocab_size=300)
    for split, shuffle in (("train", True), ("validation", False)):
        dataset = load_dataset(source, split, task="lm", val_fraction=0.1)
        tokens = token_file(dataset.part, tokenizer)
        expected = [
            i for t in dataset.examples for i in tokenizer.encode(t, add_bos=True, add_eos=True)
        ]
        assert tokens.tolist() == expected
        options = {"max_len": 16, "batch_size": 4, "seed": 3, "shuffle": shuffle}
        streams = [
            BatchStream.for_task(data, tokenizer, "lm", **options, drop_last=shuffle)
            for data in (dataset, dataclasses.replace(dataset, part=None))
        ]
        assert len(streams[0]) == len(streams[1]) > 0
        for k in range(len(streams[0]) + 1):
            a, b = (s.batch(k) for s in streams)
            assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_a_folders_identity_is_its_files_sizes_and_hashes(tmp_path):
    folder = write_source(tmp_path, "folder", "lm")
    first = data_digest(folder)
    assert first["files"] == N and first == data_digest(folder)
    (folder / "notes.md").write_text("changed, but not read")
    assert data_digest(folder) == first
    (folder / "03.txt").write_text("edited", encoding="utf-8")
    second = data_digest(folder)
    assert second["sha256"] != first["sha256"]
    (folder / "99.txt").write_text("added", encoding="utf-8")
    assert data_digest(folder)["files"] == N + 1
    train = load_dataset(folder, val_fraction=0.1)
    assert (
        train.part.identity()
        != load_dataset(folder, "validation", val_fraction=0.1).part.identity()
    )


# ---- bad input: one line naming the file, the record and what is allowed -----------------


def jsonl_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def bad_jsonl(tmp_path):
    """(file, content, task, options, the message with {path})."""
    return [
        ('{"text": "a"}\n{"txt": "b", "id": 1}\n', "lm", {},
         "{path}, line 2: no field 'text'; the record has the fields ['id', 'txt']: allowed "
         "records with a 'text' field, or data.text_field naming the field that holds the text"),
        ('{"text": 5}\n', "lm", {},
         "{path}, line 1: the text field 'text' is a number (5): allowed a string"),
        ('{"label": "a", "text": null}\n', "classification", {},
         "{path}, line 1: the text field 'text' is null: allowed a string"),
        ('{"label": [1], "text": "t"}\n', "classification", {},
         "{path}, line 1: the label field 'label' is a list: allowed a string or an integer"),
        ('{"source": "a", "target": " "}\n', "seq2seq", {},
         "{path}, line 1: the target (field 'target') is empty: allowed non-empty fields"),
        ('{"text": "a"}\n\n{"text": b}\n', "lm", {},
         "{path}, line 3: not valid JSON (Expecting value at column 10): allowed one JSON "
         'object a line, e.g. {{"text": "..."}}'),
        ('["a", "b"]\n', "lm", {},
         "{path}, line 1: an array ('[\"a\", \"b\"]'), not an object: allowed one JSON "
         'object a line, e.g. {{"text": "..."}}'),
        ('{"text": "a"}\n', "lm", {"label_field": "y"},
         "label_field is 'y': allowed only for classification data (task 'lm' reads the "
         "fields text)"),
        ('{"text": " "}\n', "lm", {},
         "{path}: no record has a non-empty 'text' field: allowed records with some text"),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(9))
def test_bad_json_lines_are_one_line_naming_the_file_and_the_line(tmp_path, case):
    content, task, options, message = bad_jsonl(tmp_path)[case]
    path = jsonl_text(tmp_path, "bad.jsonl", content)
    with pytest.raises(ValueError) as err:
        load_dataset(path, task=task, **options)
    assert str(err.value) == message.format(path=f"file {str(path)!r}")


def test_a_truncated_gzip_names_the_file_and_where_it_stopped(tmp_path):
    data = gzip.compress("".join(json.dumps({"text": t}) + "\n" for t in TEXTS).encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) - 12])  # the trailer and the last block cut off
    with pytest.raises(ValueError) as err:
        load_dataset(path)
    message = str(err.value)
    assert message.startswith(f"file {str(path)!r}, line ")
    assert message.endswith(
        ": the compressed data end early (the file is cut short): allowed a whole gzip file"
    )
    text = tmp_path / "cut.txt.gz"
    text.write_bytes(gzip.compress(b"hello\n" * 500)[:-12])
    with pytest.raises(ValueError, match=r"cut\.txt\.gz', line \d+: the compressed data end"):
        load_dataset(text)


def test_a_damaged_parquet_file_names_the_file(tmp_path):
    whole = write_parquet(tmp_path / "ok.parquet", ROWS["lm"])
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(whole.read_bytes()[:-20])  # the footer cut short
    with pytest.raises(ValueError) as err:
        load_dataset(cut)
    message = str(err.value)
    assert message.startswith(f"file {str(cut)!r}: not a Parquet file pyarrow can read (")
    assert message.endswith(
        "): allowed a whole Parquet file (e.g. written by pandas.DataFrame.to_parquet)"
    )
    assert "\n" not in message
    with pytest.raises(ValueError) as err:
        load_dataset(whole, task="classification")
    assert str(err.value) == (
        f"file {str(whole)!r}: no column 'label'; its columns are ['text']: allowed a 'label' "
        "column, or data.label_field naming the column that holds the label"
    )
    bad_type = write_parquet(tmp_path / "n.parquet", [{"text": "a"}, {"text": None}])
    with pytest.raises(ValueError) as err:
        load_dataset(bad_type)
    assert str(err.value) == (
        f"file {str(bad_type)!r}, row 2: the text field 'text' is null: allowed a string"
    )


def test_folders_without_texts_or_the_column_are_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError) as err:
        load_dataset(empty)
    assert str(err.value) == (
        f"folder {str(empty)!r} holds no .txt files (it is empty): allowed a folder of UTF-8 "
        ".txt files (each a document) or a folder written by datasets' save_to_disk"
    )
    (empty / "a.md").write_text("x")
    with pytest.raises(ValueError, match=r"holds no \.txt files \(it holds \['a\.md'\]\)"):
        load_dataset(empty)
    saved = write_datasets(tmp_path / "saved", ROWS["lm"])
    with pytest.raises(ValueError) as err:
        load_dataset(saved, task="seq2seq")
    assert str(err.value) == (
        f"folder {str(saved)!r}: no column 'source'; its columns are ['text']: allowed a "
        "'source' column, or data.source_field naming the column that holds the source"
    )
    folder = write_source(tmp_path, "folder", "lm")
    with pytest.raises(ValueError, match="holds .txt files .each an lm document.: allowed for"):
        load_dataset(folder, task="classification")


def test_a_dataset_dict_folder_names_its_splits(tmp_path):
    import datasets

    rows = datasets.Dataset.from_list(ROWS["lm"])
    datasets.DatasetDict({"train": rows, "test": rows}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ValueError, match=r"a DatasetDict of the splits \['train', 'test'\]"):
        load_dataset(tmp_path / "dd")
    assert tuple(load_dataset(tmp_path / "dd" / "test").examples) == tuple(TEXTS)


def test_field_settings_are_refused_for_plain_text(tmp_path):
    path = jsonl_text(tmp_path, "a.txt", "hello")
    with pytest.raises(ValueError) as err:
        load_dataset(path, text_field="body")
    assert str(err.value) == (
        f"text_field='body' for file {str(path)!r}: allowed only for JSON Lines, Parquet and "
        "datasets folders (a text file has no fields)"
    )


def test_a_missing_library_names_the_extra(tmp_path, monkeypatch):
    path = write_parquet(tmp_path / "d.parquet", ROWS["lm"])
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails
    with pytest.raises(ValueError) as err:
        load_dataset(path)
    assert str(err.value) == (
        f"{str(path)!r}: reading it needs the pyarrow library: pip install 'glassformer[data]'"
    )
