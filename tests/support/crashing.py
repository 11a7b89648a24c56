"""A store that dies at its n-th write, counting every way of writing the contract has
(``put``, ``put_new``, ``put_soon``, ``put_if_absent``, ``replace``, ``delete``), and any
other write point a test hands it (``tick``: a file the ledger writes beside the store).

Once dead it stays dead: every later write raises too, so nothing a dying process's other
threads (or a ``finally``) attempt lands, as with a killed process. Reads go on: they
change nothing. ``grouped()`` groups nothing, so that the points between the writes of a
group are crash points as well (on SQLite a group is one commit, which only removes points;
on Cassandra there are no groups).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table


class Crash(BaseException):
    """The simulated death of the process. A BaseException: no ``except Exception`` of the
    code under test may take it for a failure it handles and go on."""


class DyingBackend(DelegatingBackend):
    """Delegates to a real backend and dies at write number ``crash_at`` (1-based; 0: never,
    to count the writes of a run), or at the first write that is ``crash_on`` (what,
    table). ``writes`` records (what, table) of each write attempted up to and including
    the one it died at."""

    def __init__(
        self, inner: Backend, crash_at: int = 0, *, crash_on: tuple[str, str] | None = None
    ) -> None:
        super().__init__(inner)
        self.crash_at = crash_at
        self.crash_on = crash_on
        self.writes: list[tuple[str, str]] = []
        self.dead = False

    def tick(self, what: str, where: str = "") -> None:
        """One write about to be made: the process dies here when it is the one."""
        if self.dead:
            raise Crash("dead already")
        self.writes.append((what, where))
        if len(self.writes) == self.crash_at or (what, where) == self.crash_on:
            self.dead = True
            raise Crash(f"crash at write {len(self.writes)}: {what} {where}")

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        self.tick("put", table.name)
        return self.inner.put(table, rows)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        self.tick("put", table.name)  # a put, as any other, where crash points are named
        return self.inner.put_partition(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        self.tick("put_new", table.name)
        return self.inner.put_new(table, row)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        self.tick("put_soon", table.name)
        return self.inner.put_soon(table, rows)

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        self.tick("put_if_absent", table.name)
        return self.inner.put_if_absent(table, row)

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        self.tick("replace", table.name)
        return self.inner.replace(table, key, column, expected, value)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        self.tick("delete", table.name)
        self.inner.delete(table, key, written_before=written_before)

    def grouped(self) -> AbstractContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        """The store stays open: it is the test's."""
