"""One streaming pass over a text file: its checks, size, SHA-256 and character count, kept in
the cache so that a later run reads them instead of the file.

``scan_text(path)`` reads the file a block at a time (``documents.READ_BYTES``), never whole,
and refuses what ``text_bytes`` refuses (a UTF-16 or UTF-32 byte-order mark, a NUL byte, bytes
that are not UTF-8, with the same messages) and an empty or blank file. It counts the characters
of the text as ``user_files`` reads it (UTF-8 byte-order mark removed, ``\\r\\n`` read as
``\\n``), hashes the bytes (SHA-256, the data's identity for the token cache and run.json) and
notes, at the end of every block where no character or ``\\r\\n`` is cut in two, the byte
offset, the characters and the newlines before it (``TextScan.marks``): a reader then starts
at the mark before the characters it wants instead of at byte 0, and the line on which any
character lies is found by reading at most a block.

The result is written (aside, then renamed) to ``<token cache>/scans/<hash of the path>.json``
with the file's size, modification and change times and inode: a run that finds the file with
the same ones reads the scan from there without reading or hashing the file; any change (a
write changes the change time, which no tool can set back) scans it again. A cache folder that
cannot be written only means the next run scans again.

A gzipped text (``.gz``) is scanned as it is decompressed, a block at a time; its identity
(``digest``) is the compressed file's bytes and SHA-256, and a file cut short or damaged is
refused in one line naming the file (formats/compressed.py).
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..safe_write import write_text
from . import documents
from .formats.compressed import GZIP_ERRORS, gzip_problem, is_gzip, open_bytes
from .text_bytes import SAMPLE_BYTES, check_start, nul_error, utf8_error
from .token_cache import cache_folder

__all__ = ["TextScan", "scan_text"]

FORMAT = 1  # bumped when the scan's fields change
UTF8_BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class TextScan:
    """What one pass over a text file found (the module docstring)."""

    bytes: int
    sha256: str
    chars: int  # characters of the text (no byte-order mark, "\r\n" counted as one)
    marks: tuple[tuple[int, int, int], ...]  # (byte offset, characters, newlines) before each

    @property
    def digest(self) -> dict[str, Any]:
        """``{"bytes": size, "sha256": hex digest}``: the file's identity."""
        return {"bytes": self.bytes, "sha256": self.sha256}

    def mark(self, char: int) -> tuple[int, int]:
        """(byte offset, characters before it) of the last mark at or before character
        ``char``: where a reader of the text from ``char`` on may start."""
        i = bisect.bisect_right(self.marks, char, key=lambda m: m[1]) - 1
        return (0, 0) if i < 0 else self.marks[i][:2]

    def line_at(self, path: str | os.PathLike[str], char: int) -> int:
        """The line (from 1) of the file ``path`` on which character ``char`` lies."""
        i = bisect.bisect_right(self.marks, char, key=lambda m: m[1]) - 1
        byte, start, lines = (0, 0, 0) if i < 0 else self.marks[i]
        for block in documents.read_chars(path, start, char, seek=(byte, start)):
            lines += block.count("\n")
        return lines + 1


def scan_text(path: Path, cache: str | None = None) -> TextScan:
    """The scan of the text file ``path`` (the module docstring): from the cache folder
    ``cache`` (None: the token cache's default) when the file is unchanged, else read now and
    kept there. A ``ValueError`` naming the file when it is missing, not UTF-8 text, or empty."""
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise ValueError(f"file {str(path)!r} {what}: allowed a path to an existing text file")
    where = str(path.resolve())
    st = os.stat(where)
    stat = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
    kept = cache_folder(cache) / "scans" / f"{hashlib.sha256(where.encode()).hexdigest()[:40]}.json"
    found = _read_kept(kept, where, stat)
    if found is not None:
        return found
    if is_gzip(path):
        try:
            scan = _scan(path)
        except GZIP_ERRORS as err:
            raise ValueError(
                f"file {str(path)!r}: {gzip_problem(err)}: allowed a whole gzip file"
            ) from None
        compressed = documents.file_digest(path)
        scan = TextScan(int(compressed["bytes"]), str(compressed["sha256"]), scan.chars, scan.marks)
    else:
        scan = _scan(path)
    record = {"format": FORMAT, "path": where, "stat": stat, **scan.digest}
    record |= {"chars": scan.chars, "marks": scan.marks}
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_text(kept, json.dumps(record))
    except OSError:
        pass  # a cache that cannot be written: the next run scans again
    return scan


def _read_kept(kept: Path, where: str, stat: list[int]) -> TextScan | None:
    """The kept scan of the file ``where`` when its stat matches the file's current stat."""
    try:
        record = json.loads(kept.read_text(encoding="utf-8"))
        if (record["format"], record["path"], record["stat"]) != (FORMAT, where, stat):
            return None
        marks = tuple(tuple(int(x) for x in m) for m in record["marks"])
        return TextScan(int(record["bytes"]), str(record["sha256"]), int(record["chars"]), marks)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or damaged: scanned again


def _scan(path: Path) -> TextScan:
    """Read ``path`` once, a block at a time (the module docstring; a ``.gz`` file
    decompressed). As ``text_bytes`` does with the whole file, a NUL byte anywhere is refused
    before bytes that are not UTF-8."""
    hasher, decoder = hashlib.sha256(), codecs.getincrementaldecoder("utf-8")()
    size = chars = newlines = 0  # bytes, characters and newlines read so far
    held, seen = "", False  # a "\r" that may start a "\r\n"; a character that is not a space
    marks: list[tuple[int, int, int]] = []
    bad: ValueError | None = None  # the first bytes that are not UTF-8
    with open_bytes(path) as f:
        while True:
            data = f.read(documents.READ_BYTES if size else max(documents.READ_BYTES, 4))
            skip = 0
            if size == 0:
                check_start(data, path)
                skip = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
            hasher.update(data)
            nul = data.find(b"\x00")
            if nul >= 0:
                at = size + nul
                f.seek(at - at % 4)
                line = newlines + data.count(b"\n", 0, nul) + 1
                raise nul_error(f.read(SAMPLE_BYTES), at, line, path)
            if bad is None:
                body = data[skip:] if skip else data
                try:
                    text = held + decoder.decode(body, final=not data)
                except UnicodeDecodeError as e:
                    offset = size + skip - (len(e.object) - len(body)) + e.start
                    line = newlines + data.count(b"\n", 0, max(offset - size, 0)) + 1
                    bad = utf8_error(e.object[e.start : e.end], offset, line, path)
                else:
                    held = ""
                    if data and text.endswith("\r"):
                        text, held = text[:-1], "\r"
                    chars += len(text) - text.count("\r\n")
                    seen = seen or (bool(text) and not text.isspace())
            size += len(data)
            newlines += data.count(b"\n")
            if not data:
                break
            if bad is None and not held and not decoder.getstate()[0]:
                marks.append((size, chars, newlines))
    if bad is not None:
        raise bad
    if not seen:
        raise ValueError(
            f"file {str(path)!r}, line 1: the file is empty: allowed a file with some text"
        )
    return TextScan(size, hasher.hexdigest(), chars, tuple(marks))
