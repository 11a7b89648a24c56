"""CQL text derived from the table declarations of ``storage/model.py``.

Pure functions, no driver: every statement the Cassandra backend runs is built here and
asserted verbatim in ``tests/storage/test_cql.py``. Values never enter the text: queries
carry bind markers (``?``) and are prepared. The only names interpolated are the keyspace
(validated by :func:`check_identifier`), the table and column names declared in the model,
and, in ``CREATE KEYSPACE``, datacenter names and replication factors validated by
:class:`Replication`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from imixs_archive.storage.model import Table

SIMPLE = "SimpleStrategy"
NETWORK_TOPOLOGY = "NetworkTopologyStrategy"

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,47}")
_DATACENTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")

# CQL keywords that cannot be used as unquoted identifiers (Cassandra 3.x to 5.x).
_KEYWORDS = """add aggregate all allow alter and apply asc authorize batch begin by
columnfamily create default delete desc describe drop entries execute from full grant if in
index infinity insert into is keyspace keyspaces limit materialized mbean mbeans modify nan
norecursive not null of on or order primary rename replace revoke schema select set table to
token truncate unlogged unset update use using view where with"""
RESERVED = frozenset(_KEYWORDS.split())


def check_identifier(name: str) -> str:
    """``name`` when it is safe to write unquoted into CQL, else ValueError.

    Safe: lower-case letters, digits and ``_``, not starting with a digit, at most 48
    characters (Cassandra's limit for keyspace and table names), not a reserved keyword.
    """
    if not _IDENTIFIER.fullmatch(name) or name in RESERVED:
        raise ValueError(f"not a safe CQL identifier: {name!r}")
    return name


@dataclass(frozen=True)
class Replication:
    """A keyspace's replication: ``SimpleStrategy`` with one factor, or
    ``NetworkTopologyStrategy`` with one factor per datacenter."""

    strategy: str
    factors: tuple[tuple[str, int], ...]
    """``(("replication_factor", n),)`` for SimpleStrategy, ``((dc, n), ...)`` otherwise."""

    def __post_init__(self) -> None:
        if self.strategy not in (SIMPLE, NETWORK_TOPOLOGY):
            raise ValueError(f"unknown replication strategy {self.strategy!r}")
        if not self.factors:
            raise ValueError("a replication factor is required")
        for name, factor in self.factors:
            if self.strategy == SIMPLE and name != "replication_factor":
                raise ValueError("SimpleStrategy takes a single replication factor")
            if self.strategy == NETWORK_TOPOLOGY and not _DATACENTER.fullmatch(name):
                raise ValueError(f"not a datacenter name: {name!r}")
            if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= 99:
                raise ValueError(f"replication factor must be a number from 1 to 99: {factor!r}")

    def literal(self) -> str:
        """The CQL map literal, e.g. ``{'class': 'SimpleStrategy', 'replication_factor': 1}``."""
        entries = [f"'class': '{self.strategy}'"]
        entries += [f"'{name}': {factor}" for name, factor in self.factors]
        return "{" + ", ".join(entries) + "}"


def _qualified(keyspace: str, table: Table) -> str:
    return f"{check_identifier(keyspace)}.{check_identifier(table.name)}"


def _columns(table: Table, columns: Sequence[str] | None) -> str:
    names = table.column_names if columns is None else tuple(columns)
    if not names:
        raise ValueError(f"{table.name}: no columns selected")
    for name in names:
        table.column(name)  # KeyError for an undeclared column
    return ", ".join(names)


def _equal(names: Sequence[str]) -> str:
    return " AND ".join(f"{name} = ?" for name in names)


def create_keyspace(keyspace: str, replication: Replication) -> str:
    return (
        f"CREATE KEYSPACE IF NOT EXISTS {check_identifier(keyspace)} "
        f"WITH replication = {replication.literal()}"
    )


def drop_keyspace(keyspace: str) -> str:
    return f"DROP KEYSPACE IF EXISTS {check_identifier(keyspace)}"


def truncate(keyspace: str, table: Table) -> str:
    return f"TRUNCATE {_qualified(keyspace, table)}"


QUEUE_GC_GRACE_SECONDS = 3 * 3600
"""Tombstones of work-list tables are purged after this (the default ``max_hint_window``,
so a node that was down for less than that cannot bring a deleted row back)."""

TABLE_ID_NAMESPACE = uuid.UUID("5b0f3c0e-7d4e-4a6e-9a43-6e1f2b8c9d10")
"""Namespace of the deterministic table ids (:func:`table_id`)."""


def table_id(keyspace: str, table: Table) -> uuid.UUID:
    """The id a table of the model is created with, the same for every process.

    Several archive instances starting at once each run ``CREATE TABLE IF NOT EXISTS``;
    with ids of their own, two such statements racing can leave one table with two ids
    (a schema disagreement Cassandra does not heal). The same name gives the same id, so
    the races agree."""
    return uuid.uuid5(TABLE_ID_NAMESPACE, f"{check_identifier(keyspace)}.{table.name}")


def create_table(keyspace: str, table: Table, *, zstd: bool = False) -> str:
    """``CREATE TABLE IF NOT EXISTS`` with the deterministic :func:`table_id`.

    Tables of large cells (pieces, snapshot XML) get zstd when ``zstd`` (Cassandra 4.0+)
    in 64 KiB chunks; pieces only keep a compressed chunk when it saves a tenth
    (``min_compress_ratio``), so already-compressed attachments are stored raw and read
    without a decompression step."""
    columns = ", ".join(f"{c.name} {c.type.value}" for c in table.columns)
    partition = ", ".join(table.partition_key)
    if len(table.partition_key) > 1:
        partition = f"({partition})"
    key = ", ".join((partition, *table.clustering_key))
    name = _qualified(keyspace, table)
    text = f"CREATE TABLE IF NOT EXISTS {name} ({columns}, PRIMARY KEY ({key}))"
    text += f" WITH ID = {table_id(keyspace, table)}"
    if zstd and table.holds_pieces:
        text += (
            " AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64, "
            "'min_compress_ratio': 1.1}"
        )
    elif zstd and table.large_cells:
        text += " AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64}"
    if table.queue:
        text += f" AND gc_grace_seconds = {QUEUE_GC_GRACE_SECONDS}"
    return text


def insert(keyspace: str, table: Table) -> str:
    """An upsert of every column, bound in declaration order, then the write timestamp
    (microseconds: the same on every retry of one write, so a retry that lands late
    cannot overwrite a later write or undo a later delete)."""
    markers = ", ".join("?" for _ in table.columns)
    return (
        f"INSERT INTO {_qualified(keyspace, table)} "
        f"({', '.join(table.column_names)}) VALUES ({markers}) USING TIMESTAMP ?"
    )


def insert_if_absent(keyspace: str, table: Table) -> str:
    """An insert of every column, bound in declaration order, applied only where no row has
    its key (a lightweight transaction; no write timestamp: Paxos orders it). Its first
    result column, ``[applied]``, says whether it was written."""
    markers = ", ".join("?" for _ in table.columns)
    return (
        f"INSERT INTO {_qualified(keyspace, table)} "
        f"({', '.join(table.column_names)}) VALUES ({markers}) IF NOT EXISTS"
    )


def select_row(keyspace: str, table: Table, columns: Sequence[str] | None = None) -> str:
    """One row by its full primary key, bound in key order."""
    return (
        f"SELECT {_columns(table, columns)} FROM {_qualified(keyspace, table)} "
        f"WHERE {_equal(table.primary_key)}"
    )


def select_partition(
    keyspace: str,
    table: Table,
    columns: Sequence[str] | None = None,
    *,
    descending: bool = False,
    after: int = 0,
    limit: bool = False,
) -> str:
    """One partition in clustering order.

    Binds the partition key, then, when ``after`` > 0, the first ``after`` clustering
    columns of the row to start after (exclusive, in the direction read), then the limit.
    """
    clustering = table.clustering_key
    if after and not clustering:
        raise ValueError(f"{table.name} has no clustering key to start after")
    if after > len(clustering):
        raise ValueError(f"{table.name}: start_after names more than the clustering key")
    text = (
        f"SELECT {_columns(table, columns)} FROM {_qualified(keyspace, table)} "
        f"WHERE {_equal(table.partition_key)}"
    )
    if after:
        bound = clustering[:after]
        operator = "<" if descending else ">"
        if len(bound) == 1:
            text += f" AND {bound[0]} {operator} ?"
        else:
            markers = ", ".join("?" for _ in bound)
            text += f" AND ({', '.join(bound)}) {operator} ({markers})"
    if clustering:
        direction = "DESC" if descending else "ASC"
        text += " ORDER BY " + ", ".join(f"{name} {direction}" for name in clustering)
    if limit:
        text += " LIMIT ?"
    return text


def select_all(
    keyspace: str, table: Table, columns: Sequence[str] | None = None, *, limit: bool = False
) -> str:
    """Every row of the table, in token order (read it paged)."""
    text = f"SELECT {_columns(table, columns)} FROM {_qualified(keyspace, table)}"
    if limit:
        text += " LIMIT ?"
    return text


def replace_cell(keyspace: str, table: Table, column: str) -> str:
    """A compare-and-set of one value column (a lightweight transaction): binds the new
    value, then the primary key, then the value expected. Its first result column,
    ``[applied]``, says whether it was set."""
    if column in table.primary_key or column not in table.column_names:
        raise ValueError(f"{table.name}: {column!r} is not a value column")
    return (
        f"UPDATE {_qualified(keyspace, table)} SET {column} = ? "
        f"WHERE {_equal(table.primary_key)} IF {column} = ?"
    )


def delete_row(keyspace: str, table: Table) -> str:
    """Binds the write timestamp (microseconds), then the primary key."""
    return (
        f"DELETE FROM {_qualified(keyspace, table)} USING TIMESTAMP ? "
        f"WHERE {_equal(table.primary_key)}"
    )


def delete_partition(keyspace: str, table: Table) -> str:
    """Binds the write timestamp (microseconds), then the partition key."""
    return (
        f"DELETE FROM {_qualified(keyspace, table)} USING TIMESTAMP ? "
        f"WHERE {_equal(table.partition_key)}"
    )
