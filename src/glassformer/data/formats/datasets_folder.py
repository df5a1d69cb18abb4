"""A Hugging Face ``datasets`` folder written by ``Dataset.save_to_disk`` (``dataset_info.json``,
``state.json`` and ``.arrow`` files), read with ``datasets.load_from_disk`` (the ``data`` extra):
memory-mapped, a batch of rows at a time, only the columns a task needs. A ``ClassLabel``
column gives its class names. A ``DatasetDict`` folder (``dataset_dict.json``) holds one folder a
split: name the split's folder. A record is named by its row, counting from 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .common import need
from .records import Records

__all__ = ["DatasetsFolder", "is_datasets_folder"]

BATCH_ROWS = 4096  # rows read at a time
MARKS = ("state.json", "dataset_info.json", "dataset_dict.json")


def is_datasets_folder(path: Path) -> bool:
    return path.is_dir() and any((path / mark).is_file() for mark in MARKS)


class DatasetsFolder(Records):
    """The rows of a saved ``datasets.Dataset``."""

    unit = "row"

    def _dataset(self):
        splits = self.path / "dataset_dict.json"
        if splits.is_file():
            try:
                names = json.loads(splits.read_text(encoding="utf-8"))["splits"]
            except (OSError, ValueError, KeyError, TypeError):
                names = ["train", "validation"]
            raise ValueError(
                f"folder {str(self.path)!r} holds a DatasetDict of the splits {names}: allowed "
                f"the folder of one split, e.g. {str(self.path / str(names[0]))!r}"
            )
        datasets = need("datasets", self.path)
        try:
            return datasets.load_from_disk(str(self.path))
        except Exception as err:  # a damaged or partial folder
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise ValueError(
                f"folder {str(self.path)!r}: not a datasets folder load_from_disk can read "
                f"({first}): allowed a folder written by Dataset.save_to_disk"
            ) from None

    def columns(self) -> tuple[str, ...]:
        return tuple(self._dataset().column_names)

    def rows(self, fields: dict[str, str]) -> Iterator[tuple[int, tuple[object, ...]]]:
        data = self._dataset()
        for role, name in fields.items():
            if name not in data.column_names:
                raise ValueError(
                    f"folder {str(self.path)!r}: no column {name!r}; its columns are "
                    f"{sorted(data.column_names)}: allowed a {name!r} column, or "
                    f"data.{role}_field naming the column that holds the {role}"
                )
        names = list(dict.fromkeys(fields.values()))
        classes = {n: getattr(data.features[n], "names", None) for n in names}
        n = 0
        for batch in data.select_columns(names).iter(batch_size=BATCH_ROWS):
            columns = [_named(batch[name], classes[name]) for name in fields.values()]
            for values in zip(*columns, strict=True):
                n += 1
                yield n, values

    def files(self) -> list[Path]:
        return sorted(p for p in self.path.rglob("*") if p.is_file())

    def where(self, n: int) -> str:
        return f"folder {str(self.path)!r}, row {n}"


def _named(values: list, names: list[str] | None) -> list:
    """A ClassLabel column's ids as their class names (other columns as they are)."""
    if names is None:
        return values
    return [names[v] if isinstance(v, int) and 0 <= v < len(names) else v for v in values]
