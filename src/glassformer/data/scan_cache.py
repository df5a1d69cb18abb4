"""What one pass over a data file counted, kept in the cache so that a later run reads it instead
of the file: the count of a text's non-blank lines (text_lines.py) and the scan of a records file
(record_stream.py).

A result is a small JSON object written (aside, then renamed) to ``<token cache>/scans/<kind>-<the
SHA-256 of its key>.json``; the key holds what the result depends on: a file's digest (from its
stat-keyed scan, text_scan.py), or the stat of its files (``file_stats``: size, modification and
change times, inode, device; a write changes the change time, which no tool can set back), and
the settings that decide the count (the held-out fraction, the fields, ...). A kept result whose
key differs, or that does not read, is counted again. A cache folder that cannot be written only
means the next run counts again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..safe_write import write_text
from .token_cache import cache_folder

__all__ = ["file_stats", "keep", "kept"]

FORMAT = 1  # bumped when the layout of a kept result changes


def file_stats(paths: list[Path]) -> list[list[Any]]:
    """[resolved path, size, modification and change times (ns), inode, device] of each file."""
    found = []
    for path in paths:
        st = os.stat(path)
        where = str(Path(path).resolve())
        found.append([where, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
    return found


def _where(cache: str | None, kind: str, key: dict[str, Any]) -> tuple[Path, str]:
    text = json.dumps({"format": FORMAT, "kind": kind, **key}, sort_keys=True, ensure_ascii=False)
    name = hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]
    return cache_folder(cache) / "scans" / f"{kind}-{name}.json", text


def kept(cache: str | None, kind: str, key: dict[str, Any]) -> dict[str, Any] | None:
    """The result kept for ``key`` in the cache folder ``cache`` (None: the default); None when
    there is none, or it is damaged or of another key."""
    path, text = _where(cache, kind, key)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("key") != text:
            return None
        return record["value"]
    except (OSError, ValueError, KeyError):
        return None


def keep(cache: str | None, kind: str, key: dict[str, Any], value: dict[str, Any]) -> None:
    """Keep ``value`` (JSON) for ``key``; nothing when the cache folder cannot be written."""
    path, text = _where(cache, kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps({"key": text, "value": value}, ensure_ascii=False))
    except OSError:
        pass  # a cache that cannot be written: the next run counts again
