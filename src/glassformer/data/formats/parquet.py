"""Parquet files (``.parquet``), read with ``pyarrow`` (the ``data`` extra) a batch of rows at a
time and only the columns a task needs. A record is named by its row, counting from 1."""

from __future__ import annotations

from collections.abc import Iterator

from .common import need
from .records import Records

__all__ = ["ParquetRows"]

BATCH_ROWS = 4096  # rows read at a time


class ParquetRows(Records):
    """The rows of a Parquet file."""

    unit = "row"

    def _file(self):
        pq = need("pyarrow.parquet", self.path)
        try:
            return pq.ParquetFile(self.path)
        except Exception as err:  # pyarrow's ArrowInvalid, OSError: not a readable file
            raise ValueError(
                f"file {str(self.path)!r}: not a Parquet file pyarrow can read ({_first(err)}): "
                "allowed a whole Parquet file (e.g. written by pandas.DataFrame.to_parquet)"
            ) from None

    def columns(self) -> tuple[str, ...]:
        return tuple(self._file().schema_arrow.names)

    def rows(self, fields: dict[str, str]) -> Iterator[tuple[int, tuple[object, ...]]]:
        data = self._file()
        have = data.schema_arrow.names
        for role, name in fields.items():
            if name not in have:
                raise ValueError(
                    f"file {str(self.path)!r}: no column {name!r}; its columns are "
                    f"{sorted(have)}: allowed a {name!r} column, or data.{role}_field naming "
                    f"the column that holds the {role}"
                )
        names = list(dict.fromkeys(fields.values()))
        n = 0
        batches = data.iter_batches(batch_size=BATCH_ROWS, columns=names)
        while True:
            try:
                batch = next(batches, None)
            except Exception as err:  # a damaged row group
                raise ValueError(
                    f"{self.where(n + 1)}: the file is damaged ({_first(err)}): allowed a whole "
                    "Parquet file"
                ) from None
            if batch is None:
                return
            columns = [batch.column(name).to_pylist() for name in fields.values()]
            for values in zip(*columns, strict=True):
                n += 1
                yield n, values


def _first(err: BaseException) -> str:
    """The first line of an error's message."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
