"""The bytes of a data file as UTF-8 text, or a refusal that says what the bytes are instead.

A data file must be UTF-8. A UTF-8 byte-order mark is removed. Refused, naming the file, the
byte offset (and line) and the way to convert it:

* a UTF-16 or UTF-32 byte-order mark;
* any NUL byte. NULs at every second byte (3 in every 4) are UTF-16 (UTF-32) without a
  byte-order mark, whose ASCII characters are valid UTF-8 and would otherwise be read as text
  with NULs between the letters; other NULs are binary data;
* bytes that are not valid UTF-8 (Latin-1, Windows-1252, ...).
"""

from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["SAMPLE_BYTES", "check_start", "decode_text", "nul_error", "utf8_error"]

BOMS: tuple[tuple[bytes, str, str], ...] = (  # UTF-32 first: its LE mark starts like UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)", "UTF-32"),
    (b"\xff\xfe", "UTF-16 (little-endian)", "UTF-16"),
    (b"\xfe\xff", "UTF-16 (big-endian)", "UTF-16"),
)
SAMPLE_BYTES = 4096  # the bytes from the first NUL on that tell UTF-16 and UTF-32 apart
MIN_SAMPLE_BYTES = 16


def decode_text(data: bytes, path: Path) -> str:
    """``data`` (the bytes of ``path``) decoded as UTF-8 without its byte-order mark; a
    ``ValueError`` naming ``path`` when it is not UTF-8 text (module docstring)."""
    check_start(data, path)
    nul = data.find(b"\x00")
    if nul >= 0:
        start = nul - nul % 4  # keeps the alignment of the code units
        line = data.count(b"\n", 0, nul) + 1
        raise nul_error(data[start : start + SAMPLE_BYTES], nul, line, path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        start = len(data) - len(e.object) + e.start  # e.object lacks a UTF-8 byte-order mark
        line = data.count(b"\n", 0, start) + 1
        raise utf8_error(e.object[e.start : e.end], start, line, path) from None


def check_start(head: bytes, path: Path) -> None:
    """Refuse a file whose first bytes ``head`` are a UTF-16 or UTF-32 byte-order mark."""
    for bom, encoding, iconv_name in BOMS:
        if head.startswith(bom):
            raise ValueError(
                f"file {str(path)!r}, line 1: a {encoding} byte-order mark at byte offset 0 "
                f"(bytes {bom!r}): allowed UTF-8 text only; convert it with "
                f"{_iconv(iconv_name, path)}"
            )


def nul_error(sample: bytes, nul: int, line: int, path: Path) -> ValueError:
    """The refusal of a NUL byte at byte offset ``nul`` (on ``line``) of ``path``: UTF-16 or
    UTF-32 without a byte-order mark when the NULs of ``sample`` (the ``SAMPLE_BYTES`` bytes
    of the file from ``nul - nul % 4``) say so, else binary data."""
    where = f"file {str(path)!r}, line {line}"
    guess = _wide_encoding(sample, nul % 4)
    if guess:
        pattern, encoding, iconv_name = guess
        return ValueError(
            f"{where}: {pattern} from byte offset {nul} on: the file looks like {encoding} "
            f"without a byte-order mark: allowed UTF-8 text only; convert it with "
            f"{_iconv(iconv_name, path)}"
        )
    return ValueError(
        f"{where}: a NUL byte (0x00) at byte offset {nul}: the file holds binary data, not "
        "text: allowed UTF-8 text without NUL bytes"
    )


def utf8_error(bad: bytes, offset: int, line: int, path: Path) -> ValueError:
    """The refusal of the bytes ``bad``, not UTF-8, at byte offset ``offset`` (on ``line``)."""
    return ValueError(
        f"file {str(path)!r}, line {line}: bytes {bad!r} at byte offset {offset} are not valid "
        f"UTF-8: allowed UTF-8 text only; re-save the file as UTF-8 (from Windows-1252 or "
        f"Latin-1: {_iconv('WINDOWS-1252', path)})"
    )


def _wide_encoding(data: bytes, nul: int) -> tuple[str, str, str] | None:
    """(the NUL pattern, name, iconv name) of UTF-16 / UTF-32 without a byte-order mark when
    the NULs of ``SAMPLE_BYTES`` bytes from ``nul`` fall in their pattern (text with many
    ASCII characters: the high bytes of their code units are NUL), else None."""
    start = nul - nul % 4  # keeps the alignment of the code units
    sample = data[start : start + SAMPLE_BYTES]
    sample = sample[: len(sample) - len(sample) % 4]
    if len(sample) < MIN_SAMPLE_BYTES:
        return None  # too few bytes to see a pattern: refused as binary data
    at = [sample[k::4].count(0) / (len(sample) // 4) for k in range(4)]  # NULs at 4n + k
    even, odd = (at[0] + at[2]) / 2, (at[1] + at[3]) / 2
    if min(at[2], at[3]) >= 0.9 and at[0] <= at[2] / 10:
        return "3 NUL bytes in every 4", "UTF-32 (little-endian)", "UTF-32LE"
    if min(at[0], at[1]) >= 0.9 and at[3] <= at[0] / 10:
        return "3 NUL bytes in every 4", "UTF-32 (big-endian)", "UTF-32BE"
    if odd >= 0.1 and even <= odd / 10:
        return "NUL bytes at odd offsets", "UTF-16 (little-endian)", "UTF-16LE"
    if even >= 0.1 and odd <= even / 10:
        return "NUL bytes at even offsets", "UTF-16 (big-endian)", "UTF-16BE"
    return None


def _iconv(encoding: str, path: Path) -> str:
    out = path.with_name(f"{path.stem}-utf8{path.suffix}")
    return f"iconv -f {encoding} -t UTF-8 {shlex.quote(str(path))} > {shlex.quote(str(out))}"
