"""User files: the three formats, and a ValueError naming file and line for every bad file."""

from __future__ import annotations

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
    ("oneclass.csv", "\npos,fine\npos,good\n", "classification", 2, "at least 2 distinct labels"),
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


def test_missing_file_and_directory_name_the_path(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(ValueError, match="does not exist") as e:
        load_dataset(missing)
    assert str(missing) in str(e.value)
    with pytest.raises(ValueError, match="is a directory"):
        load_dataset(tmp_path, task="lm")


def test_tsv_needs_a_task_and_options_are_checked(tmp_path):
    p = _write(tmp_path, "x.tsv", "a\tb\n")
    with pytest.raises(ValueError, match="task is None for file"):
        load_dataset(p)
    with pytest.raises(ValueError, match="one_per_line is True: allowed only for task 'lm'"):
        load_dataset(p, task="seq2seq", one_per_line=True)
    with pytest.raises(ValueError, match=r"\['seed'\] are not allowed"):
        load_dataset(p, task="seq2seq", seed=0)
