"""JSON Lines (``.jsonl``, ``.ndjson``, and the same ending in ``.gz``): one JSON object a line,
read a line at a time. Blank lines are skipped; a record is named by its line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .compressed import GZIP_ERRORS, gzip_problem, open_bytes
from .records import Records, missing_field

__all__ = ["JsonLines"]

EXAMPLE = '{"text": "..."}'


class JsonLines(Records):
    """The objects of a JSON Lines file."""

    unit = "line"

    def objects(self) -> Iterator[tuple[int, dict]]:
        """(line number, object) for each non-blank line."""
        n = 0
        try:
            with open_bytes(self.path) as f:
                for n, raw in enumerate(f, 1):
                    record = self._parse(n, raw)
                    if record is not None:
                        yield n, record
        except GZIP_ERRORS as err:
            raise ValueError(
                f"{self.where(n + 1)}: {gzip_problem(err)}: allowed a whole gzip file"
            ) from None

    def _parse(self, n: int, raw: bytes) -> dict | None:
        where = self.where(n)
        try:
            line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(
                f"{where}: bytes {raw[err.start : err.end]!r} at column {err.start + 1} are not "
                "valid UTF-8: allowed UTF-8 text only"
            ) from None
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{where}: not valid JSON ({err.msg} at column {err.colno}): allowed one JSON "
                f"object a line, e.g. {EXAMPLE}"
            ) from None
        if not isinstance(record, dict):
            kind = {list: "an array", str: "a string"}.get(type(record), "a value")
            raise ValueError(
                f"{where}: {kind} ({line.strip()[:20]!r}), not an object: allowed one JSON "
                f"object a line, e.g. {EXAMPLE}"
            )
        return record

    def columns(self) -> tuple[str, ...]:
        for _, record in self.objects():
            return tuple(record)
        return ()

    def rows(self, fields: dict[str, str]) -> Iterator[tuple[int, tuple[object, ...]]]:
        for n, record in self.objects():
            for role, name in fields.items():
                if name not in record:
                    raise ValueError(missing_field(self.where(n), role, name, list(record)))
            yield n, tuple(record[name] for name in fields.values())


def is_jsonl(path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return name.endswith((".jsonl", ".ndjson"))
