"""The scan of a text file (glassformer/data/text_scan.py): one streaming pass that refuses what
decoding the whole file refuses, with the same message, counts the characters as the whole
text has them, finds the line of any character, and is kept in the cache by the file's stat."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import glassformer.data.documents as documents
import glassformer.data.formats as formats
import glassformer.data.text_scan as text_scan
import glassformer.runs.data_identity as data_identity
from glassformer.data import load_dataset
from glassformer.data.documents import file_digest, read_chars
from glassformer.data.text_bytes import decode_text
from glassformer.data.text_scan import scan_text

# a byte-order mark, \r\n line ends (one cut between its \r and \n by 5-byte blocks), characters
# of two, three and four bytes, a lone \r, blank lines
TEXT = "\ufeffab\r\ncaf\u00e9 \u20ac\n\n\U0001f600 x\ry\r\n\r\n  end\r\n" * 3


@pytest.fixture
def scans(monkeypatch):
    """How many times a file was read and hashed to scan it or to find its digest."""
    calls = []
    scan, digest = text_scan._scan, documents.file_digest
    monkeypatch.setattr(text_scan, "_scan", lambda p: (calls.append("scan"), scan(p))[1])
    counted = lambda p: (calls.append("digest"), digest(p))[1]  # noqa: E731
    monkeypatch.setattr(documents, "file_digest", counted)
    monkeypatch.setattr(formats, "file_digest", counted)
    return calls


@pytest.mark.parametrize("block", [1, 2, 3, 5, 13, 1 << 20])
def test_the_scan_counts_and_hashes_what_reading_the_whole_file_gives(block, tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "READ_BYTES", block)
    path = tmp_path / "t.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    text = decode_text(path.read_bytes(), path).replace("\r\n", "\n")
    scan = scan_text(path, str(tmp_path / "cache"))
    assert (scan.chars, scan.digest) == (len(text), file_digest(path)) == (74, scan.digest)
    for c in range(len(text) + 1):  # the line of each character, from the mark before it
        assert scan.line_at(path, c) == text.count("\n", 0, c) + 1
        byte, start = scan.mark(c)
        assert start <= c
        assert "".join(read_chars(path, c, len(text), seek=(byte, start))) == text[c:]


# bytes that are not UTF-8 text, cut into blocks of 5 bytes: the messages of decoding the
# whole file (text_bytes.decode_text), whichever block the fault lies in
NOT_TEXT = {
    "latin1_late": "first line\nsecond line\ncaf\xe9\n".encode("latin-1"),
    "split_char_then_bad": "\u20ac\u20ac\u20ac\n".encode() + b"\xe2\x82",
    "truncated_at_end": b"ok text\n\xe2\x82",
    "bom_then_bad": b"\xef\xbb\xbfok\ncaf\xe9\n",
    "bad_then_nul": b"bad \xe9 byte\nthen a NUL\x00 later\n",
    "utf16_late": b"ascii first\n" + "then UTF-16 text, long enough\n".encode("utf-16-le"),
    "utf32_bom": "text".encode("utf-32"),
    "blank": b"\xef\xbb\xbf \r\n\n\t \n",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(NOT_TEXT))
def test_bytes_that_are_not_text_are_refused_as_decoding_the_whole_file_refuses_them(
    name, tmp_path, monkeypatch
):
    monkeypatch.setattr(documents, "READ_BYTES", 5)
    path = tmp_path / f"{name}.txt"
    path.write_bytes(NOT_TEXT[name])
    with pytest.raises(ValueError) as whole:
        load_dataset(path, task="seq2seq")  # a records file: decoded whole (user_files.py)
    with pytest.raises(ValueError) as streamed:
        scan_text(path, str(tmp_path / "cache"))
    assert str(streamed.value) == str(whole.value)
    assert not (tmp_path / "cache").exists()  # nothing is kept of a refused file


def test_a_second_run_reads_the_scan_and_hashes_nothing(tmp_path, scans, monkeypatch):
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path / "cache"))  # this test's scans only
    path = tmp_path / "notes.txt"
    path.write_text("the cat sat on the mat.\n" * 100)

    def run():  # what a run does with a text file before encoding it
        train, val = (
            load_dataset(path, s, task="lm", val_fraction=0.1) for s in ("train", "validation")
        )
        plan = SimpleNamespace(data=str(path), validation=str(path))
        return train, val, data_identity.data_identity(plan, train, val)

    train, val, identity = run()
    assert scans == ["scan"]  # hashed once for both splits and the run's record
    expected = {"file": str(path), **file_digest(Path(path))}
    assert identity == {"training": expected, "validation": expected}
    assert train.part.digest == val.part.digest == file_digest(path)
    del scans[:]
    assert run() == (train, val, identity) and scans == []  # a hit: nothing read or hashed
    [kept] = (tmp_path / "cache" / "scans").glob("*.json")
    assert kept.stat().st_size < 1000


def test_a_changed_file_is_scanned_again(tmp_path, scans):
    path = tmp_path / "notes.txt"
    path.write_text("the cat sat on the mat.\n" * 100)
    first = scan_text(path)
    before = path.stat()
    path.write_text("the dog sat on the mat.\n" * 100)  # the same size, and the same mtime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = scan_text(path)
    assert changed.sha256 != first.sha256 and changed.sha256 == file_digest(path)["sha256"]
    assert scan_text(path) == changed and scans == ["scan", "scan"]
    os.utime(path)  # touched: scanned again, to the same result
    assert scan_text(path) == changed and scans == ["scan", "scan", "scan"]


def test_a_damaged_or_unwritable_scan_cache_scans_again(tmp_path, scans):
    path = tmp_path / "notes.txt"
    path.write_text("the cat sat on the mat.\n" * 100)
    cache = tmp_path / "cache"
    first = scan_text(path, str(cache))
    [kept] = (cache / "scans").iterdir()
    kept.write_text('{"format": 1, "path"')  # cut short
    assert scan_text(path, str(cache)) == first and scans == ["scan", "scan"]
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert scan_text(path, str(blocked)) == first and scans == ["scan", "scan", "scan"]
