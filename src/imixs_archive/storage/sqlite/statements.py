"""SQL for the SQLite backend, derived from the table declarations of ``storage/model.py``.

Nothing here is written per table: every statement is built from a :class:`Table`.
Identifiers come from the model only (and are checked to be plain names); every value is
a bound parameter. Values are converted between Python and SQLite by the column's
declared type: ``date`` is stored as TEXT ``YYYY-MM-DD`` (which sorts like the date),
``int``/``bigint`` as INTEGER, ``text`` as TEXT and ``blob`` as BLOB. A table with a
packed cell (``Table.packing``) has one more column, its marker (INTEGER, NULL when the
cell holds its bytes as given), written and read with the cell (``storage/packing.py``).
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from imixs_archive.storage import packing
from imixs_archive.storage.model import ColumnType, Table

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

SQL_TYPES: dict[ColumnType, str] = {
    ColumnType.TEXT: "TEXT",
    ColumnType.BLOB: "BLOB",
    ColumnType.INT: "INTEGER",
    ColumnType.BIGINT: "INTEGER",
    ColumnType.DATE: "TEXT",
}

_INT_RANGES: dict[ColumnType, tuple[int, int]] = {
    ColumnType.INT: (-(2**31), 2**31 - 1),
    ColumnType.BIGINT: (-(2**63), 2**63 - 1),
}


def quote(name: str) -> str:
    """A model identifier, double-quoted. Refuses anything but a plain lower-case name."""
    if not _NAME.match(name):
        raise ValueError(f"not a plain identifier: {name!r}")
    return f'"{name}"'


def _names(names: Sequence[str]) -> str:
    return ", ".join(quote(name) for name in names)


def _row_value(names: Sequence[str]) -> str:
    """``"a"`` for one column, ``("a", "b")`` for several (an SQLite row value)."""
    return quote(names[0]) if len(names) == 1 else f"({_names(names)})"


def _placeholders(count: int) -> str:
    one = ", ".join("?" * count)
    return one if count == 1 else f"({one})"


def without_rowid(table: Table) -> bool:
    """Whether the table is declared ``WITHOUT ROWID``.

    A rowid table stores each row once, keyed by a hidden integer, plus a separate index
    on the primary key; a ``WITHOUT ROWID`` table is that index alone. For small rows this
    saves the second B-tree (about half the space and one B-tree write per row). For big
    rows it is known to be bad: SQLite's own guidance is that rows should stay below about
    1/20 of a page, and a row of a 1 MiB piece (or a large snapshot XML) would sit in the
    primary-key B-tree's interior and leaf pages, overflowing them on every split. So
    tables with a BLOB column (``snapshots``, ``documents_data``) keep their rowid and
    every other table, all of whose rows are a few short strings and integers, drops it.
    ``bench/sqlite_tuning.py --rowid`` measures both for the small-row tables.
    """
    return all(column.type is not ColumnType.BLOB for column in table.columns)


def stored_columns(table: Table) -> tuple[str, ...]:
    """The table's columns in SQLite: the declared ones, then a packing marker."""
    marker = () if table.packing is None else (table.packing.marker,)
    return table.column_names + marker


@functools.lru_cache(maxsize=256)
def create_table(table: Table) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for one table. Key columns are NOT NULL (a rowid
    table would otherwise accept NULL keys, an old SQLite quirk)."""
    keys = set(table.primary_key)
    columns = [
        f"{quote(c.name)} {SQL_TYPES[c.type]}{' NOT NULL' if c.name in keys else ''}"
        for c in table.columns
    ]
    if table.packing is not None:
        columns.append(f"{quote(table.packing.marker)} INTEGER")
    columns.append(f"PRIMARY KEY ({_names(table.primary_key)})")
    suffix = " WITHOUT ROWID" if without_rowid(table) else ""
    return f"CREATE TABLE IF NOT EXISTS {quote(table.name)} ({', '.join(columns)}){suffix}"


def add_marker(table: Table) -> str:
    """The marker column added to a table created before it had one (all its rows are
    then cells stored as given: NULL)."""
    assert table.packing is not None
    return f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(table.packing.marker)} INTEGER"


@functools.lru_cache(maxsize=256)
def upsert(table: Table) -> str:
    """``INSERT OR REPLACE`` of a whole row, parameters in declaration order (then the
    packing marker)."""
    names = stored_columns(table)
    marks = ", ".join("?" * len(names))
    return f"INSERT OR REPLACE INTO {quote(table.name)} ({_names(names)}) VALUES ({marks})"


@functools.lru_cache(maxsize=256)
def insert_new(table: Table) -> str:
    """``INSERT OR IGNORE`` of a whole row: written only when no row has its key."""
    return upsert(table).replace("INSERT OR REPLACE", "INSERT OR IGNORE", 1)


def _where(names: Sequence[str]) -> str:
    return " AND ".join(f"{quote(name)} = ?" for name in names)


@functools.lru_cache(maxsize=256)
def delete(table: Table, key: tuple[str, ...]) -> str:
    """``DELETE`` of the rows matching the given key columns (full key or partition key)."""
    return f"DELETE FROM {quote(table.name)} WHERE {_where(key)}"


@functools.lru_cache(maxsize=256)
def select(table: Table, columns: tuple[str, ...], key: tuple[str, ...]) -> str:
    """``SELECT`` of some columns of the row(s) matching the given key columns."""
    return f"SELECT {_names(columns)} FROM {quote(table.name)} WHERE {_where(key)}"


@functools.lru_cache(maxsize=256)
def select_page(
    table: Table,
    columns: tuple[str, ...],
    equal: tuple[str, ...],
    order: tuple[str, ...],
    *,
    after: bool,
    descending: bool = False,
) -> str:
    """One page of a keyset-paged scan.

    ``equal`` columns are fixed (the partition key of a partition scan, none for a whole
    table); rows come ordered by ``order``; with ``after``, only rows whose ``order``
    columns compare greater (less when descending) than the bound, as a row value.
    The last parameter is always the LIMIT.
    """
    conditions = [f"{quote(name)} = ?" for name in equal]
    if after:
        operator = "<" if descending else ">"
        conditions.append(f"{_row_value(order)} {operator} {_placeholders(len(order))}")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    direction = "DESC" if descending else "ASC"
    ordering = ", ".join(f"{quote(name)} {direction}" for name in order)
    return f"SELECT {_names(columns)} FROM {quote(table.name)}{where} ORDER BY {ordering} LIMIT ?"


@functools.lru_cache(maxsize=64)
def count_partitions(table: Table) -> str:
    """How many partitions the table holds."""
    key = _names(table.partition_key)
    return f"SELECT count(*) FROM (SELECT DISTINCT {key} FROM {quote(table.name)})"


@functools.lru_cache(maxsize=64)
def nth_partition(table: Table) -> str:
    """The partition key of the partition after the first ``?`` ones, in key order."""
    key = _names(table.partition_key)
    return f"SELECT DISTINCT {key} FROM {quote(table.name)} ORDER BY {key} LIMIT 1 OFFSET ?"


# --- values -----------------------------------------------------------------------------

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]


def _encoder(table: Table, name: str, kind: ColumnType) -> Encoder:
    where = f"{table.name}.{name}"

    def text(value: Any) -> Any:
        if isinstance(value, str):
            return value
        raise TypeError(f"{where}: expected str, got {type(value).__name__}")

    def blob(value: Any) -> Any:
        if isinstance(value, bytes | bytearray | memoryview):
            return value
        raise TypeError(f"{where}: expected bytes, got {type(value).__name__}")

    def integer(value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where}: expected int, got {type(value).__name__}")
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise ValueError(f"{where}: {value} is out of range for {kind.value}")
        return value

    def date(value: Any) -> Any:
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return value.isoformat()
        raise TypeError(f"{where}: expected datetime.date, got {type(value).__name__}")

    encoders: dict[ColumnType, Encoder] = {
        ColumnType.TEXT: text,
        ColumnType.BLOB: blob,
        ColumnType.INT: integer,
        ColumnType.BIGINT: integer,
        ColumnType.DATE: date,
    }
    return encoders[kind]


def _identity(value: Any) -> Any:
    return value


def _decoder(table: Table, name: str, kind: ColumnType) -> Decoder:
    decode = _decode_date if kind is ColumnType.DATE else _identity
    return _key(decode) if name in table.primary_key else decode


class DamagedCell(packing.UnpackError):
    """A cell that holds what its column cannot (``storage/sqlite/backend.py`` raises it as
    a ``DamagedRowError``)."""


def _decode_date(value: Any) -> Any:
    if value is None:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise DamagedCell(f"a date cell holds {value!r}: the row is damaged") from exc


def _key(decode: Decoder) -> Decoder:
    """A key column's decoder: a key cell is never NULL (NOT NULL), save in a damaged page."""

    def decoded(value: Any) -> Any:
        if value is None:
            raise DamagedCell("a key cell is NULL: the row is damaged")
        return decode(value)

    return decoded


@dataclass(frozen=True)
class Codec:
    """Conversions for one table, looked up once. ``pack_level``: the zstd level a packed
    cell is written with (None: written as given; read either way)."""

    table: Table
    encoders: Mapping[str, Encoder]
    decoders: Mapping[str, Decoder]
    pack_level: int | None = None

    @classmethod
    def of(cls, table: Table, pack_level: int | None = None) -> Codec:
        return cls(
            table,
            {c.name: _encoder(table, c.name, c.type) for c in table.columns},
            {c.name: _decoder(table, c.name, c.type) for c in table.columns},
            pack_level,
        )

    def selected(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The columns to select for ``names``: with the marker when the packed cell is
        among them (:meth:`decode` takes the values in this order)."""
        packed = self.table.packing
        if packed is None or packed.cell not in names:
            return names
        return (*names, packed.marker)

    def encode(self, name: str, value: Any) -> Any:
        """One value for a bound parameter. None is allowed (NULL) in value columns only."""
        if value is None:
            if name in self.table.primary_key:
                raise ValueError(f"{self.table.name}.{name}: a key column cannot be None")
            return None
        return self.encoders[name](value)

    def encode_row(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """The parameters of :func:`upsert` for one row (every column given, no others)."""
        names = self.table.column_names
        if len(row) != len(names) or any(name not in row for name in names):
            missing = [name for name in names if name not in row]
            extra = [name for name in row if name not in names]
            raise ValueError(
                f"{self.table.name}: a row needs exactly the declared columns"
                f" (missing {missing}, unknown {extra})"
            )
        values = tuple(self.encode(name, row[name]) for name in names)
        packed = self.table.packing
        if packed is None:
            return values
        at = names.index(packed.cell)
        cell, marker = values[at], None
        if cell is not None and self.pack_level is not None:
            cell, marker = packing.pack(cell, self.pack_level)
        return (*values[:at], cell, *values[at + 1 :], marker)

    def encode_key(self, key: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
        return tuple(self.encode(name, key[name]) for name in names)

    def decode(self, names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
        """A row of ``names`` from the values of :meth:`selected` columns (the marker
        last, when there is one: the packed cell is unpacked)."""
        decoders = self.decoders
        row = {name: decoders[name](value) for name, value in zip(names, values, strict=False)}
        packed = self.table.packing
        if packed is not None and len(values) > len(names):
            row[packed.cell] = packing.unpack(
                row[packed.cell], values[len(names)], again=self.table.holds_pieces
            )
        return row


def value_size(values: Sequence[Any]) -> int:
    """About how many bytes a row's parameters occupy (to bound a transaction)."""
    size = 16
    for value in values:
        if isinstance(value, memoryview):
            size += value.nbytes
        elif isinstance(value, bytes | bytearray | str):
            size += len(value)
        else:
            size += 8
    return size
