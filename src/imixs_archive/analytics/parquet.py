"""Parquet output of the table export, through pyarrow: one row group per batch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from imixs_archive.analytics.columns import Column

_TYPES: dict[str, Any] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "datetime": pa.timestamp("us", tz="UTC"),
    "decimal": pa.string(),
    "bytes": pa.binary(),
    "json": pa.string(),
}


def arrow_type(column: Column) -> Any:
    base = _TYPES[column.kind]
    return pa.list_(base) if column.multi else base


class ParquetTableWriter:
    """Writes batches of rows as row groups (zstd-compressed) to a binary stream."""

    def __init__(self, columns: Sequence[Column], out: IO[bytes]) -> None:
        self._schema = pa.schema([pa.field(c.name, arrow_type(c)) for c in columns])
        self._writer = pq.ParquetWriter(out, self._schema, compression="zstd")

    def write_batch(self, rows: Sequence[Sequence[Any]]) -> None:
        arrays = [
            pa.array([row[index] for row in rows], type=field.type)
            for index, field in enumerate(self._schema)
        ]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self._schema))

    def close(self) -> None:
        self._writer.close()


def join_parquet(
    pieces: Sequence[Path], columns: Sequence[Column], out: IO[bytes], batch_rows: int
) -> int:
    """Write the rows of the Parquet files ``pieces``, in order, to ``out`` as one file in
    row groups of ``batch_rows`` (the last one shorter): the file an export in one go
    writes. One row group in memory at a time (and one piece's batch). Returns the row
    groups written."""
    schema = pa.schema([pa.field(c.name, arrow_type(c)) for c in columns])
    groups = 0
    held: list[Any] = []
    count = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        for piece in pieces:
            for batch in pq.ParquetFile(piece).iter_batches(batch_size=batch_rows):
                held.append(batch)
                count += batch.num_rows
                while count >= batch_rows:
                    table = pa.Table.from_batches(held, schema=schema)
                    writer.write_table(table.slice(0, batch_rows))
                    groups += 1
                    rest = table.slice(batch_rows)
                    held, count = rest.to_batches(), rest.num_rows
        if count:
            writer.write_table(pa.Table.from_batches(held, schema=schema))
            groups += 1
    return groups
