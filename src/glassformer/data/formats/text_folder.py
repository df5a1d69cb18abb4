"""A folder of ``.txt`` files (lm): each file one document, in the order of their paths inside
the folder (sub-folders included; hidden files and folders left out). Each file is checked as a
``.txt`` file is (UTF-8, see text_bytes.py) and counted once; its text is read again, a block at
a time, when the documents are encoded. A blank file is skipped; the held-out documents are
every n-th of the others (splits.py)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..documents import Documents, file_digest, read_chars
from ..examples import TextDataset
from ..on_disk import OnDisk
from ..splits import held_out_count, is_held_out, percent
from ..text_bytes import decode_text

__all__ = ["FolderDocuments", "folder_digest", "read_text_folder", "text_files"]


def text_files(folder: Path) -> list[Path]:
    """The ``.txt`` files of ``folder``, sorted by their path inside it."""
    found = [
        p for p in folder.rglob("*")
        if p.suffix.lower() == ".txt" and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]  # fmt: skip
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def folder_digest(folder: Path, files: list[Path]) -> dict[str, Any]:
    """``{"bytes": total size, "sha256": ..., "files": count}``: the SHA-256 of each file's path
    inside ``folder``, size and SHA-256, so that an added, removed, renamed or edited file
    changes it."""
    listed = [{"path": f.relative_to(folder).as_posix(), **file_digest(f)} for f in files]
    digest = hashlib.sha256(json.dumps(listed, sort_keys=True).encode("utf-8")).hexdigest()
    return {"bytes": sum(f["bytes"] for f in listed), "sha256": digest, "files": len(listed)}


class FolderDocuments(Documents):
    """The files ``files`` of ``folder``, each one document of ``chars[i]`` characters."""

    def __init__(
        self, folder: Path, files: list[Path], chars: list[int], cache: str | None = None
    ) -> None:
        self.folder, self.files, self.sizes, self.cache = folder, files, chars, cache

    def identity(self) -> dict[str, Any]:
        return {"folder": folder_digest(self.folder, self.files)}

    def documents(self, check: bool = True) -> Iterator[Iterator[str]]:
        for path, n in zip(self.files, self.sizes, strict=True):
            yield _unchanged(path, n)

    @property
    def count(self) -> int:
        return len(self.files)

    @property
    def chars(self) -> int:
        return sum(self.sizes)

    @property
    def label(self) -> str:
        return f"{self.name}, {len(self.files):,} files"

    @property
    def name(self) -> str:
        return self.folder.name + "/"


def _unchanged(path: Path, n: int) -> Iterator[str]:
    """The ``n`` characters of ``path``, a block at a time; a ``ValueError`` if it changed."""
    before = os.stat(path)
    yield from read_chars(path, 0, n)
    after = os.stat(path)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        raise ValueError(
            f"file {str(path)!r} changed while it was encoded: allowed files that stay the "
            "same while a run reads them"
        )


def read_text_folder(
    folder: Path, split: str, fraction: Fraction, cache: str | None
) -> TextDataset:
    """The lm split of a folder of ``.txt`` files (the module docstring)."""
    name, folder = str(folder), folder.resolve()
    files = text_files(folder)
    if not files:
        seen = sorted(p.name for p in folder.iterdir())[:5]
        holds = f"it holds {seen}" if seen else "it is empty"
        raise ValueError(
            f"folder {name!r} holds no .txt files ({holds}): allowed a folder of UTF-8 .txt "
            "files (each a document) or a folder written by datasets' save_to_disk"
        )
    kept: list[tuple[Path, int]] = []
    for path in files:
        text = decode_text(path.read_bytes(), path).replace("\r\n", "\n")
        if text.strip():
            kept.append((path, len(text)))
    if not kept:
        raise ValueError(f"folder {name!r}: every .txt file is blank: allowed some text")
    if fraction:
        held_out_count(len(kept), fraction, "non-blank .txt files", name)
    want = split == "validation" and bool(fraction)
    chosen = [
        (p, n) for i, (p, n) in enumerate(kept)
        if (bool(fraction) and is_held_out(i, fraction)) == want
    ]  # fmt: skip
    docs = FolderDocuments(folder, [p for p, _ in chosen], [n for _, n in chosen], cache)
    description = f"the .txt files of {name}"
    if want:
        description = f"{percent(fraction)} of {description}, held out"
    return TextDataset(
        name, "lm", split, OnDisk(docs), description=description, part=docs,
        unit="file",
    )  # fmt: skip
