"""Small documents by name (``name -> JSON``): the one contract of the tables that keep a
wing's books, ``archive_checks`` (the jobs', ``archive/check_books.py``),
``archive_ledger_head`` (the ledger's, ``LedgerBooks.head``) and ``archive_census`` (the
analytics' records, ``analytics/day_store.py``). A book is read, written, written unless
it is there, set by compare and set on the text it holds (``Backend.replace``: a
lightweight transaction on Cassandra) or dropped; names are listed by prefix; and a lease
(one process at a time) is a book of its own.

Each wing names its own table (``tests/test_layers.py``) and hands it in; the contract
adapts to the table's layout: its key column and its one other column, text or bytes
(the JSON then stored UTF-8). What a book holds, and what it means, is up to the wing.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from typing import Any

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ColumnType, Table
from imixs_archive.timezones import now_ms

Value = str | Mapping[str, Any]
"""What a book is set to: its text as it is, or an object written as JSON."""


class Books:
    """The books of one table (a key column and one text or bytes column)."""

    def __init__(self, backend: Backend, table: Table) -> None:
        (key,) = table.primary_key
        (column,) = (c for c in table.columns if c.name != key)
        self._backend, self._table, self._key, self._column = backend, table, key, column.name
        self._bytes = column.type is ColumnType.BLOB

    def text(self, name: str) -> str | None:
        """The book as it is stored; None when there is none."""
        row = self._backend.get(self._table, {self._key: name})
        return None if row is None else self._decoded(row[self._column])

    def read(self, name: str) -> dict[str, Any] | None:
        """The book as a JSON object; None when it is missing or damaged (begun again)."""
        return json_object(self.text(name))

    def write(self, name: str, value: Value) -> None:
        """Set a book whatever it holds."""
        self._backend.put(self._table, [{self._key: name, self._column: self._encoded(value)}])

    def open(self, name: str, value: Value) -> str | None:
        """Write a book unless it is there: None when this call wrote it, else what is
        there (written first by another process)."""
        row = {self._key: name, self._column: self._encoded(value)}
        found = self._backend.put_if_absent(self._table, row)
        return None if found is None else self._decoded(found[self._column])

    def turn(self, name: str, expected: str, value: Value) -> bool:
        """Set a book to ``value`` if it holds the text ``expected`` (compare and set)."""
        key, old, new = {self._key: name}, self._encoded(expected), self._encoded(value)
        return self._backend.replace(self._table, key, self._column, old, new)

    def drop(self, name: str) -> None:
        self._backend.delete(self._table, {self._key: name})

    def names(self, prefix: str) -> list[str]:
        """The books whose name starts with ``prefix`` (a pass over the table: its books
        are few)."""
        rows = self._backend.scan(self._table, columns=[self._key])
        return sorted(str(row[self._key]) for row in rows if str(row[self._key]).startswith(prefix))

    def _encoded(self, value: Value) -> str | bytes:
        text = value if isinstance(value, str) else json.dumps(value)
        return text.encode(errors="surrogateescape") if self._bytes else text

    def _decoded(self, stored: str | bytes) -> str:
        """The text of a stored value; bytes that are not UTF-8 (damage) kept as they are
        (escaped), so that the text encodes back to them: a compare and set matches."""
        if isinstance(stored, bytes):
            return stored.decode(errors="surrogateescape")
        return str(stored)

    # ---- a lease: one process at a time --------------------------------------------------

    def take_lease(
        self,
        name: str,
        holder: str,
        millis: int,
        *,
        now: int | None = None,
        free_when_gone: bool = True,
    ) -> str:
        """'' when ``holder`` holds the lease ``name`` for the next ``millis`` now (taken,
        or renewed once less than half of it is left), else who holds it. Set by compare
        and set, so of two processes asking at once one gets it. A holder that was a
        process of this machine and is gone (killed) frees it at once, unless not
        ``free_when_gone`` (then it is waited out). ``now``: the caller's clock (epoch ms)."""
        now = now_ms() if now is None else now
        mine = json.dumps({"holder": holder, "until": now + millis})
        text = self.text(name)
        if text is None:
            text = self.open(name, mine)
            if text is None:
                return ""
        other, until = _held(text)
        if other != holder and until > now and not (free_when_gone and _gone(other)):
            return other
        if other == holder and until - now > millis // 2:
            return ""  # held for long enough still: not written again at each call
        if self.turn(name, text, mine) or self.text(name) == mine:
            return ""  # (the second: this call's own write, answered as failed)
        return "another process"

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease up if ``holder`` holds it, so that another takes over at once."""
        text = self.text(name)
        if text is not None and _held(text)[0] == holder:
            self.turn(name, text, {"holder": "", "until": 0})


def json_object(text: str | None) -> dict[str, Any] | None:
    """A book's text as a JSON object; None when there is none or it is not one."""
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _held(text: str) -> tuple[str, int]:
    """(holder, until) of a lease's text; a damaged one is free ("", 0): taken over."""
    try:
        held = json.loads(text)
        return str(held["holder"]), int(held["until"])
    except (ValueError, KeyError, TypeError):
        return "", 0


def _gone(holder: str) -> bool:
    """Whether a lease's holder (``user@host:pid:token``) was a process of this machine
    that is gone (killed): its lease is then free at once, not when it runs out, so that a
    job killed and run again goes on straight away."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    if parts[0].rpartition("@")[2] != socket.gethostname():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
