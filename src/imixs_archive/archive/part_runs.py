"""What a whole-archive job needs to stop and go on, alone or split into parts.

A job walks one or more tables in the store's range order (``Backend.scan_range``: the
token ring on Cassandra, the partition key on SQLite) and keeps a book of where it stands
in ``archive_checks`` (``check_books.py``), named ``JOB/K/N`` for part K of N. Run again
after Ctrl-C, a kill or a lost store, it goes on from its book; ``--restart`` begins
again. This module holds what every such job shares:

- the **lease** ``JOB-lease/K/N``: one process per part at a time (BusyError for another);
- the **plan** ``JOB-plan/N``: where each table is cut for N parts, cut once by the first
  part to start, so that the N parts (on one machine or several) cover every row once;
- the **end**: a finished part marks its book; the last of the N to finish removes the
  plan and the books;
- the **save clock**: a book is written every few seconds, not after every partition.

What a book holds beyond the place is the job's (``verify_runs.py``, ``instance_runs.py``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.errors import BusyError
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import Table
from imixs_archive.timezones import now_ms

SAVE_MS = 5_000
"""A running part writes its book this often."""
LEASE_MS = 60_000
"""A part's lease, renewed with every save: a holder silent this long is taken over."""
WHOLE = {"id": "whole", "cuts": {}}
"""The plan of a job in one part: nothing cut."""


def book_name(job: str, part: int, parts: int) -> str:
    return f"{job}/{part}/{parts}"


@contextmanager
def part_lease(
    books: CheckBooks, job: str, part: int, parts: int, holder: str
) -> Iterator[Callable[[], str]]:
    """Hold part ``part`` of ``parts`` of ``job`` for the block; yields the renewal (call
    it with every save). BusyError when another process runs that part."""
    if not 1 <= part <= parts:
        raise ValueError(f"part {part} of {parts}: expected 1 <= K <= N")
    lease = f"{job}-lease/{part}/{parts}"
    busy = books.take_lease(lease, holder, LEASE_MS)
    if busy:
        raise BusyError(f"part {part} of {parts} of a {job} runs in another process ({busy})")
    try:
        yield lambda: books.take_lease(lease, holder, LEASE_MS)
    finally:
        books.release_lease(lease, holder)


def part_plan(
    backend: Backend, books: CheckBooks, job: str, tables: Mapping[str, Table], parts: int
) -> dict[str, Any]:
    """Where the parts of ``job`` are cut in each of ``tables`` (by walk name): the same
    for every part of one run, whoever cut it."""
    if parts == 1:
        return WHOLE
    found = books.read(f"{job}-plan/{parts}")
    if found is not None and set(found.get("cuts", {})) == set(tables):
        return found
    cuts = {
        name: [backend.position_at(table, Fraction(k, parts)) for k in range(1, parts)]
        for name, table in tables.items()
    }
    plan = {"id": secrets.token_hex(8), "cuts": cuts, "created": now_ms()}
    return books.open(f"{job}-plan/{parts}", plan)


def part_bounds(
    plan: dict[str, Any], walk: str, part: int, parts: int
) -> tuple[Position | None, Position | None]:
    """The range of ``walk``'s table that part ``part`` of ``parts`` covers: after the
    first bound, up to the second (None: the table's start or end)."""
    if parts == 1:
        return None, None
    cuts = plan["cuts"][walk]
    lower = cuts[part - 2] if part > 1 else None
    upper = cuts[part - 1] if part < parts else None
    return lower, upper


def resumable(saved: dict[str, Any] | None, plan: dict[str, Any]) -> bool:
    """Whether a book read is an unfinished run of this plan, to go on from."""
    return saved is not None and saved.get("plan") == plan["id"] and not saved.get("finished")


def finish_part(books: CheckBooks, job: str, plan: dict[str, Any], part: int, parts: int) -> None:
    """Part ``part`` is over: its book goes (one part), or is marked finished; the last
    part to finish removes the plan and the parts' books."""
    name = book_name(job, part, parts)
    if parts == 1:
        books.drop(name)
        return
    books.write(name, {"plan": plan["id"], "finished": now_ms()})
    names = [book_name(job, k, parts) for k in range(1, parts + 1)]
    found = [books.read(n) or {} for n in names]
    if all(b.get("plan") == plan["id"] and b.get("finished") for b in found):
        books.drop(f"{job}-plan/{parts}")
        for n in names:
            books.drop(n)


class SaveClock:
    """True every ``SAVE_MS``: when a running part writes its book."""

    def __init__(self, millis: int | None = None) -> None:
        self._millis = SAVE_MS if millis is None else millis
        self._last = time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if (now - self._last) * 1000 < self._millis:
            return False
        self._last = now
        return True


def parse_part(text: str) -> tuple[int, int]:
    """``K/N`` as (K, N); ValueError naming the form."""
    try:
        k, n = (int(value) for value in text.split("/"))
    except ValueError:
        raise ValueError(f"expected K/N (part K of N, e.g. 2/4), got {text!r}") from None
    if not 1 <= k <= n or n > 1024:
        raise ValueError(f"expected K/N with 1 <= K <= N <= 1024, got {text!r}")
    return k, n
