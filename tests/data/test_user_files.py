"""User files: the three formats, and a ValueError naming file and line for every bad file."""

from __future__ import annotations

import csv

import pytest

from glassformer.data import load_dataset


def _write(tmp_path, name: str, content: str | bytes):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8", newline="")
    return p


# ---- good files -------------------------------------------------------------------------


def test_text_file_is_one_document_or_one_per_line(tmp_path):
    p = _write(tmp_path, "names.txt", "\ufeffemma\r\nolivia\n\n  \nava\n")
    whole = load_dataset(p)
    assert whole.task == "lm" and whole.examples == ("emma\nolivia\n\n  \nava\n",)
    lines = load_dataset(str(p), one_per_line=True)
    assert lines.examples == ("emma", "olivia", "ava")


def test_tsv_pairs_for_seq2seq(tmp_path):
    p = _write(tmp_path, "pairs.tsv", 'abc\tcba\r\n\n"q, r"\t1 2\nx y\tz\n')
    ds = load_dataset(p, task="seq2seq", split="validation")
    assert (ds.task, ds.split, ds.name) == ("seq2seq", "validation", str(p))
    assert ds.examples == (("abc", "cba"), ('"q, r"', "1 2"), ("x y", "z"))


def test_csv_classification_with_quotes_header_and_sorted_labels(tmp_path):
    content = 'label,text\npos,"good, really"\nneg,bad\npos,"a ""quoted""\nline"\n neg ,meh\n'
    ds = load_dataset(_write(tmp_path, "reviews.csv", content))
    assert ds.task == "classification" and ds.labels == ("neg", "pos")
    assert ds.examples == (
        ("pos", "good, really"),
        ("neg", "bad"),
        ("pos", 'a "quoted"\nline'),
        ("neg", "meh"),
    )
    assert [ds.label_id(lab) for lab, _ in ds] == [1, 0, 1, 0]


def test_tsv_classification(tmp_path):
    p = _write(tmp_path, "lab.tsv", "b\tsecond, with comma\na\tfirst\n")
    ds = load_dataset(p, task="classification")
    assert ds.labels == ("a", "b") and ds.examples == (("b", "second, with comma"), ("a", "first"))


@pytest.mark.parametrize("name, sep", [("long.csv", ","), ("long.tsv", "\t")])
def test_a_field_longer_than_csvs_default_limit_is_read(tmp_path, name, sep):
    """csv refuses fields over 131,072 characters by default; a text of 1 MB is read whole
    (data.overflow decides what a long text becomes), and the process's limit is kept."""
    before = csv.field_size_limit()
    long = "word " * 200_000  # 1,000,000 characters
    p = _write(tmp_path, name, f"pos{sep}{long}\nneg{sep}short\n")
    ds = load_dataset(p, task="classification")
    assert ds.examples == (("pos", long), ("neg", "short"))
    assert csv.field_size_limit() == before


# ---- bad files: ValueError names the file and the line ----------------------------------

BAD_FILES = [
    # (file name, content, task, line, fragment of what is allowed / wrong)
    ("empty.txt", "", "lm", 1, "empty"),
    ("blank.tsv", " \n\n\t\n", "seq2seq", 1, "empty"),
    ("latin1.txt", "ok\nfine\ncaf\xe9\n".encode("latin-1"), "lm", 3, "UTF-8"),
    ("three.tsv", "a\tb\nc\td\te\n", "seq2seq", 2, "found 3 fields: allowed exactly 2"),
    ("one.tsv", "a\tb\n\nc\n", "seq2seq", 3, "found 1 fields: allowed exactly 2"),
    ("nosrc.tsv", "a\tb\n  \tb\n", "seq2seq", 2, "the source is empty"),
    ("notgt.tsv", "a\tb\nc\td\ne\t\n", "seq2seq", 3, "the target is empty"),
    ("commas.csv", "pos,fine\nneg,bad, really bad\n", "classification", 2, "quote a field"),
    ("nolabel.csv", "pos,fine\n,bad\n", "classification", 2, "the label is empty"),
    ("notext.csv", 'pos,fine\nneg,"a\nb"\nneg, \n', "classification", 4, "the text is empty"),
    ("quote.csv", 'pos,ok\nneg,"bad"x\n', "classification", 2, "label,text"),
    ("header_only.csv", "label,text\n", "classification", 1, "no label,text records"),
]


@pytest.mark.parametrize(("name", "content", "task", "line", "fragment"), BAD_FILES)
def test_bad_file_raises_valueerror_with_file_and_line(
    tmp_path, name, content, task, line, fragment
):
    p = _write(tmp_path, name, content)
    with pytest.raises(ValueError) as e:
        load_dataset(p, task=task)
    msg = str(e.value)
    assert str(p) in msg
    assert f"line {line}:" in msg
    assert fragment in msg


def test_a_file_of_one_label_reads(tmp_path):
    """Evaluating on one class is legitimate: only training refuses a single label
    (tests/cli/test_one_label.py)."""
    data = load_dataset(_write(tmp_path, "oneclass.csv", "\npos,fine\npos,good\n"))
    assert data.labels == ("pos",)
    assert data.examples == (("pos", "fine"), ("pos", "good")) and data.lines == (2, 3)


def test_missing_file_and_directory_name_the_path(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(ValueError, match="does not exist") as e:
        load_dataset(missing)
    assert str(missing) in str(e.value)
    with pytest.raises(ValueError, match="holds no .txt files"):  # a folder of texts
        load_dataset(tmp_path, task="lm")


def test_tsv_needs_a_task_and_options_are_checked(tmp_path):
    p = _write(tmp_path, "x.tsv", "a\tb\n")
    with pytest.raises(ValueError, match="task is None for file"):
        load_dataset(p)
    with pytest.raises(ValueError, match="one_per_line is True: allowed only for task 'lm'"):
        load_dataset(p, task="seq2seq", one_per_line=True)
    with pytest.raises(ValueError, match=r"\['seed'\] are not allowed"):
        load_dataset(p, task="seq2seq", seed=0)


# ---- header rows, the label column, formats that are not text ----------------------------


@pytest.mark.parametrize(
    ("header", "rows"),
    [
        ("text,label", "good film,pos\nbad film,neg\n"),
        ("Text , LABEL", "good film,pos\nbad film,neg\n"),
        ("label,text", "pos,good film\nneg,bad film\n"),
    ],
)
def test_a_header_row_names_the_column_order(tmp_path, header, rows):
    ds = load_dataset(_write(tmp_path, "r.csv", f"{header}\n{rows}"))
    assert ds.labels == ("neg", "pos")
    assert ds.examples == (("pos", "good film"), ("neg", "bad film"))
    assert ds.lines == (2, 3)


def test_a_seq2seq_header_row_in_either_order(tmp_path):
    p = _write(tmp_path, "p.tsv", "target\tsource\ncba\tabc\nzy\tyz\n")
    ds = load_dataset(p, task="seq2seq")
    assert ds.examples == (("abc", "cba"), ("yz", "zy")) and ds.lines == (2, 3)


def test_a_label_column_of_mostly_distinct_values_is_refused(tmp_path):
    # text,label rows without a header: the "labels" are the texts
    rows = "".join(f"message number {i},{'ham' if i % 3 else 'spam'}\n" for i in range(301))
    p = _write(tmp_path, "swapped.csv", rows)
    with pytest.raises(ValueError) as e:
        load_dataset(p)
    assert str(e.value) == (
        f"file {str(p)!r}: the label column has 301 distinct values in 301 rows; is the first "
        "column the text? allowed label,text rows, at least 2 a label on average (a text,label "
        "header swaps the columns)"
    )
    # the same rows under a header that names the order train two classes
    fixed = load_dataset(_write(tmp_path, "fixed.csv", "text,label\n" + rows))
    assert fixed.labels == ("ham", "spam") and len(fixed) == 301
    # few rows per class is fine up to half the rows; a tiny file is not checked
    half = "".join(f"c{i // 2},text {i}\n" for i in range(20))
    assert len(load_dataset(_write(tmp_path, "half.csv", half)).labels) == 10
    tiny = "".join(f"c{i},text {i}\n" for i in range(9))
    assert len(load_dataset(_write(tmp_path, "tiny.csv", tiny)).labels) == 9


@pytest.mark.parametrize("name", ["data.json", "x.json.gz", "x.tar.gz", "a.zip", "x.pdf"])
def test_formats_that_are_not_text_are_refused(tmp_path, name):
    p = _write(tmp_path, name, '{"text": "hello"}\n')
    with pytest.raises(ValueError, match="is not plain text: allowed UTF-8 text") as e:
        load_dataset(p, task="lm")
    assert str(p) in str(e.value) and ".tsv or .csv" in str(e.value)


# ---- lines and held-out validation ---------------------------------------------------------


def test_examples_keep_their_lines(tmp_path):
    p = _write(tmp_path, "r.csv", 'label,text\n\npos,"two\nlines"\nneg,bad\n')
    ds = load_dataset(p)
    assert ds.lines == (3, 5) and ds.where(1) == f"file {str(p)!r}, line 5"
    names = load_dataset(_write(tmp_path, "n.txt", "emma\n\nava\n"), one_per_line=True)
    assert names.lines == (1, 3)
    assert load_dataset("reverse", num_examples=3).where(2) == "dataset 'reverse', examples[2]"


def test_a_text_holds_out_its_last_part(tmp_path):
    text = "".join(f"line {i}\n" for i in range(100))  # 790 characters
    p = _write(tmp_path, "notes.txt", text)
    train = load_dataset(p, val_fraction=0.1)
    val = load_dataset(p, "validation", val_fraction=0.1)
    assert (len(train[0]), len(val[0])) == (711, 79)  # floor(790 * 0.1) = 79
    assert train[0] + val[0] == text and val.split == "validation"
    assert val.lines == (text.count("\n", 0, 711) + 1,)
    assert load_dataset(p, "validation", val_fraction=0.1) == val  # the same part every time
    assert load_dataset(p, "validation").examples == (text,)  # no fraction: the whole file


def test_records_hold_out_an_evenly_spread_part(tmp_path):
    rows = "label\ttext\n" + "".join(f"{'ab'[i >= 50]}\ttext {i}\n" for i in range(100))
    p = _write(tmp_path, "sorted.tsv", rows)  # sorted by label: the last 10% are all "b"
    train = load_dataset(p, task="classification", val_fraction=0.1)
    val = load_dataset(p, "validation", task="classification", val_fraction=0.1)
    assert [t for _, t in val] == [f"text {i}" for i in range(9, 100, 10)]
    assert val.lines == tuple(range(11, 102, 10))
    assert {lab for lab, _ in val} == {"a", "b"} and train.labels == val.labels == ("a", "b")
    assert sorted(train.examples + val.examples) == sorted(load_dataset(p, task="classification"))
    names = _write(tmp_path, "names.txt", "".join(f"n{i}\n" for i in range(25)))
    held = load_dataset(names, "validation", one_per_line=True, val_fraction=0.2)
    assert held.examples == ("n4", "n9", "n14", "n19", "n24")


def test_a_file_too_short_to_hold_out_is_refused(tmp_path):
    p = _write(tmp_path, "nine.tsv", "".join(f"s{i}\tt{i}\n" for i in range(9)))
    with pytest.raises(ValueError) as e:
        load_dataset(p, task="seq2seq", val_fraction=0.1)
    assert str(e.value).startswith(
        f"file {str(p)!r}: 9 rows are too few to hold out val_fraction=0.1 for validation"
    )
    assert str(e.value).endswith(
        "at least 10 rows, or a separate validation file (val_data=FILE, or val_data=none to "
        "train on the whole file)"
    )
    assert e.value.names == ("val_data",)  # the command line's --val-data
    for bad in (1, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="val_fraction is .*: allowed a number in"):
            load_dataset(p, task="seq2seq", val_fraction=bad)


# ---- text that is not UTF-8: refused naming the encoding, the byte offset and the fix -------

CSV = "label,text\npos,a good film\nneg,a bad film\npos,fine\nneg,dull\n"
NOT_UTF8 = [
    # (file name, bytes, line, what the message says)
    ("bom16.csv", CSV.encode("utf-16"), 1,
     "a UTF-16 (little-endian) byte-order mark at byte offset 0 (bytes b'\\xff\\xfe'): "
     "allowed UTF-8 text only; convert it with iconv -f UTF-16 -t UTF-8 "),
    ("bom16be.tsv", b"\xfe\xff" + "s\tt\n".encode("utf-16-be"), 1,
     "a UTF-16 (big-endian) byte-order mark at byte offset 0"),
    ("bom32.txt", "text".encode("utf-32"), 1, "a UTF-32 (little-endian) byte-order mark"),
    ("le16.csv", CSV.encode("utf-16-le"), 1,
     "NUL bytes at odd offsets from byte offset 1 on: the file looks like UTF-16 (little-endian) "
     "without a byte-order mark: allowed UTF-8 text only; convert it with iconv -f UTF-16LE -t "
     "UTF-8 "),
    ("be16.tsv", "source\ttarget\nab\tba\n".encode("utf-16-be"), 1,
     "NUL bytes at even offsets from byte offset 0 on: the file looks like UTF-16 (big-endian)"),
    ("le32.txt", "some text\nmore\n".encode("utf-32-le"), 1,
     "3 NUL bytes in every 4 from byte offset 1 on: the file looks like UTF-32 (little-endian)"),
    ("late16.txt", b"ascii first\n" + "then UTF-16 text\n".encode("utf-16-le"), 2,
     "NUL bytes at odd offsets from byte offset 13 on"),
    ("nuls.txt", b"\x00" * 64, 1,
     "a NUL byte (0x00) at byte offset 0: the file holds binary data, not text"),
    ("one_nul.txt", b"some text\nand\x00more\n", 2, "a NUL byte (0x00) at byte offset 13"),
    ("latin.csv", "pos,fine\nneg,caf\xe9\n".encode("latin-1"), 2,
     "bytes b'\\xe9' at byte offset 16 are not valid UTF-8: allowed UTF-8 text only; re-save "
     "the file as UTF-8 (from Windows-1252 or Latin-1: iconv -f WINDOWS-1252 -t UTF-8 "),
    ("bom_latin.txt", b"\xef\xbb\xbfok\ncaf\xe9\n", 2, "bytes b'\\xe9' at byte offset 9"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "content", "line", "message"), NOT_UTF8, ids=[case[0] for case in NOT_UTF8]
)
def test_text_that_is_not_utf8_is_refused_naming_the_encoding(
    tmp_path, name, content, line, message
):
    p = _write(tmp_path, name, content)
    task = {".txt": "lm", ".csv": "classification", ".tsv": "seq2seq"}[p.suffix]
    with pytest.raises(ValueError) as e:
        load_dataset(p, task=task)
    assert str(e.value).startswith(f"file {str(p)!r}, line {line}: {message}"), str(e.value)


def test_the_message_gives_the_iconv_command_for_the_file(tmp_path):
    p = _write(tmp_path, "my data.csv", CSV.encode("utf-16-le"))
    with pytest.raises(ValueError) as e:
        load_dataset(p, task="classification")
    assert str(e.value).endswith(
        f"iconv -f UTF-16LE -t UTF-8 '{p}' > '{tmp_path / 'my data-utf8.csv'}'"
    )


def test_a_utf8_byte_order_mark_is_removed(tmp_path):
    p = _write(tmp_path, "bom.csv", b"\xef\xbb\xbf" + CSV.encode("utf-8"))
    ds = load_dataset(p, task="classification")
    assert ds.examples[0] == ("pos", "a good film") and ds.lines[0] == 2  # the header was read
    text = _write(tmp_path, "bom.txt", b"\xef\xbb\xbfhello\n")
    assert load_dataset(text).examples == ("hello\n",)
