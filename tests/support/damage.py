"""Damage in the store, as a failing disk or a hand with write access makes it: one bit of a
stored cell flipped where it lies (the embedded store: the cell as SQLite holds it, packed or
not, through a connection of its own; Cassandra: written back through CQL)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import Table
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support import raw_sqlite


def flip_bit(data: bytes, bit: int) -> bytes:
    changed = bytearray(data)
    changed[bit // 8] ^= 1 << (bit % 8)
    return bytes(changed)


def flip_stored_bit(
    backend: Backend, table: Table, key: dict[str, Any], rng: random.Random, column: str = "data"
) -> int:
    """Flip one random bit of ``column`` of a stored row, as stored; returns the bit."""
    inner = getattr(backend, "inner", backend)
    if isinstance(inner, SQLiteBackend):
        where = " AND ".join(f"{name} = ?" for name in key)
        with raw_sqlite.opened(inner.path) as raw:
            (cell,) = raw.execute(
                f"SELECT {column} FROM {table.name} WHERE {where}", tuple(key.values())
            ).fetchone()
            bit = rng.randrange(len(cell) * 8)
            raw.execute(
                f"UPDATE {table.name} SET {column} = ? WHERE {where}",
                (flip_bit(cell, bit), *key.values()),
            )
        return bit
    row = backend.get(table, key)
    assert row is not None, key
    bit = rng.randrange(len(row[column]) * 8)
    backend.put(table, [{**row, column: flip_bit(row[column], bit)}])
    return bit


def damage_page(store: Path, name: str, *, index: bool = False) -> int:
    """Overwrite the middle of the root page of table ``name``'s b-tree (``index``: of its
    primary key's index, a rowid table's second b-tree) with junk, as a failing disk or a
    torn write leaves it; the store must be closed. Returns the page number."""
    path = store / "archive.db"
    kind, column = ("index", "tbl_name") if index else ("table", "name")
    with raw_sqlite.opened(path) as raw:
        page_size = raw.execute("PRAGMA page_size").fetchone()[0]
        (root,) = raw.execute(
            f"SELECT rootpage FROM sqlite_master WHERE type = ? AND {column} = ?", (kind, name)
        ).fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size + 8)
        file.write(b"\xa5" * 64)
    return int(root)
