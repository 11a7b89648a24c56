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

:class:`PartRun` is that walk, for every such job: :meth:`PartRun.held` takes the lease
for the block and the plan; the run keeps the place (the walk at hand, the position after
its last partition done), takes up a stopped run's book (:meth:`PartRun.take_up`), saves
it (:meth:`PartRun.passed` says when) and ends the part (:meth:`PartRun.finish`). The book
is ``{"plan", "walk", "after", ..., "saved"}``: what it holds beyond the place is the
job's (``verify_runs.py``, ``gc_runs.py``, ``instance_runs.py``, which ``retention``,
``backup`` and ``export-table`` use).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, Self, TypeVar

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.errors import BusyError
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.books import json_object
from imixs_archive.storage.model import Table
from imixs_archive.timezones import now_ms

SAVE_MS = 5_000
"""A running part writes its book this often."""
LEASE_MS = 60_000
"""A part's lease, renewed at the saves (written again once half of it is left): a holder
silent this long is taken over."""
WHOLE = {"id": "whole", "cuts": {}}
"""The plan of a job in one part: nothing cut."""
R = TypeVar("R")


@dataclass
class PartDone(Generic[R]):
    """A finished run of a job (or a part of it): its report, and where it went on from."""

    report: R
    part: int = 1
    parts: int = 1
    resumed: str = ""
    """Where the run went on from ('' when it began): the walk and how far it was."""
    seconds: float = 0.0


class PartRun:
    """Part ``part`` of ``parts`` of ``job``, its lease held: the tables it walks one
    after the other (``walks``, by name), where it stands (``walk``, and ``after`` the
    last partition done in it: None at the walk's start), what a stopped run of it saved
    (``found``) and its book."""

    def __init__(
        self,
        backend: Backend,
        books: CheckBooks,
        plan: dict[str, Any],
        renew: Callable[[], str],
        *,
        job: str,
        walks: Sequence[str],
        part: int,
        parts: int,
    ) -> None:
        self.backend, self._books, self._plan, self._renew = backend, books, plan, renew
        self.job, self.walks, self.part, self.parts = job, tuple(walks), part, parts
        self.book = f"{job}/{part}/{parts}"
        self.walk = 0
        self.after: Position | None = None
        self.found: dict[str, Any] | None = None
        """The book of the stopped run this one goes on from (None: it begins)."""
        self.clock = SaveClock()

    @classmethod
    @contextmanager
    def held(
        cls,
        backend: Backend,
        job: str,
        tables: Mapping[str, Table],
        *,
        holder: str,
        part: int = 1,
        parts: int = 1,
    ) -> Iterator[Self]:
        """Part ``part`` of ``parts`` of ``job`` over ``tables`` (walk name -> table,
        walked in this order) for the block, its lease held and its plan cut (or read).
        BusyError when another process runs this part. The job takes up a stopped run's
        book (:meth:`take_up`) and ends with :meth:`finish`."""
        books = CheckBooks(backend)
        with part_lease(books, job, part, parts, holder) as renew:
            plan = part_plan(backend, books, job, tables, parts)
            yield cls(
                backend, books, plan, renew, job=job, walks=list(tables), part=part, parts=parts
            )

    def take_up(
        self, restart: bool, accept: Callable[[dict[str, Any]], bool] | None = None
    ) -> None:
        """Go on where an unfinished run of this plan stood, unless ``restart``
        (and unless ``accept``, given, refuses its book)."""
        saved = None if restart else self._books.read(self.book)
        if saved is None or saved.get("plan") != self._plan["id"] or saved.get("finished"):
            return
        if accept is not None and not accept(saved):
            return
        self.found, self.walk, self.after = saved, int(saved.get("walk", 0)), saved.get("after")

    def begin_again(self) -> None:
        """Walk the part from its start (what a stopped run left cannot be used)."""
        self.found, self.walk, self.after = None, 0, None

    def where(self) -> str:
        """The walk the run stands in, by name ("the end" past the last)."""
        return self.walks[self.walk] if self.walk < len(self.walks) else "the end"

    def bounds(self, walk: int) -> tuple[Position | None, Position | None]:
        """The range of the ``walk``-th table this part covers: after the first bound, up
        to the second (None: the table's start or end)."""
        if self.parts == 1:
            return None, None
        cuts = self._plan["cuts"][self.walks[walk]]
        lower = cuts[self.part - 2] if self.part > 1 else None
        upper = cuts[self.part - 1] if self.part < self.parts else None
        return lower, upper

    def start(self) -> Position | None:
        """Where the walk at hand goes on: after ``after``, else from the part's start."""
        return self.after if self.after is not None else self.bounds(self.walk)[0]

    def ranges(
        self, state: Callable[[], dict[str, Any]]
    ) -> Iterator[tuple[int, Position | None, Position | None]]:
        """Each walk left, from where the run stands: (its index, after, up to); when one
        is walked the run stands at the next's start, saved with ``state()``."""
        while self.walk < len(self.walks):
            yield self.walk, self.start(), self.bounds(self.walk)[1]
            self.walk, self.after = self.walk + 1, None
            self.save(state())

    def passed(self, at: Position) -> bool:
        """A partition is done (the run stands after ``at``); True when a save is due."""
        self.after = at
        return self.clock.due()

    def save(self, state: dict[str, Any]) -> None:
        """The book: the place, with ``state`` (what the job counted up to it)."""
        place = {"plan": self._plan["id"], "walk": self.walk, "after": self.after}
        self._books.write(self.book, {**place, **state, "saved": now_ms()})
        self._renew()

    def finish(self, shared: Sequence[str] = ()) -> None:
        """The part is done: its book goes (one part), or is marked finished; the last
        part to finish removes the plan, the parts' books and those of :meth:`plan_book`
        named in ``shared``."""
        if self.parts == 1:
            self._books.drop(self.book)
            return
        plan = self._plan["id"]
        self._books.write(self.book, {"plan": plan, "finished": now_ms()})
        names = [f"{self.job}/{k}/{self.parts}" for k in range(1, self.parts + 1)]
        found = [self._books.read(name) or {} for name in names]
        if all(book.get("plan") == plan and book.get("finished") for book in found):
            ours = [f"{self.job}-plan/{self.parts}", *names]
            for name in [*ours, *(f"{self.job}-{what}/{self.parts}" for what in shared)]:
                self._books.drop(name)

    def plan_book(self, what: str, state: dict[str, Any] | None) -> dict[str, Any] | None:
        """A book every part of this plan shares (``JOB-what/N``): this ``state`` when no
        part wrote it yet for this plan, else what the first part wrote (``state`` None:
        only read, None when no part wrote it). Removed with the plan (:meth:`finish`).
        A run in one part has no plan: ``state`` as it is."""
        if self.parts == 1:
            return state
        name = f"{self.job}-{what}/{self.parts}"
        if state is None:
            found = self._books.read(name)
            return found if found is not None and found.get("plan") == self._plan["id"] else None
        mine = {**state, "plan": self._plan["id"]}
        text = self._books.open(name, mine)
        if text is None:
            return mine
        found = json_object(text)
        if found is None or found.get("plan") != self._plan["id"]:  # an earlier plan's
            if self._books.turn(name, text, mine):
                return mine
            found = self._books.read(name) or mine
        return found


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
    first = books.open(f"{job}-plan/{parts}", plan)  # another part's, cut at once
    return plan if first is None else json_object(first) or plan


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
