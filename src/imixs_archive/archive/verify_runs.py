"""A whole ``verify`` that stops and goes on, alone or split into parts.

A run walks the tables of ``verify.py`` one after the other, each in the store's range
order, and records every few seconds where it stands with what it found so far (the
``verify/K/N`` book of ``archive_checks``): a run stopped by Ctrl-C, a kill or a lost
store goes on there when ``verify`` is run again, as ``ledger verify`` does (``--restart``
begins again). What it found before it stopped is kept with the place, so the report at
the end is the one an unstopped run gives.

``--part K/N`` splits each table into N ranges (the token ring on Cassandra, the key
space on SQLite), cut once for all N parts (the ``verify-plan/N`` book, written by the
first part to start): N processes, on one machine or several, each verifying its part,
together check every row once. Each part is a run of its own (it stops and goes on alone);
the last part to finish removes the plan. Only part 1 reports the store's own findings, and
what needs the whole archive (the bytes ``gc`` would free) only a verify in one part.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.verify import (
    WALKS,
    Progress,
    VerifyReport,
    finish,
    start_whole,
    walk_range,
)
from imixs_archive.errors import BusyError
from imixs_archive.storage.base import Backend, Position
from imixs_archive.timezones import now_ms

SAVE_MS = 5_000
LEASE_MS = 60_000


@dataclass
class VerifyRun:
    """A finished run (or part): its report, and where it went on from."""

    report: VerifyReport
    part: int = 1
    parts: int = 1
    resumed: str = ""
    """Where the run went on from ('' when it began): the walk and how far it was."""
    seconds: float = 0.0


@dataclass
class _State:
    name: str
    plan: dict[str, Any]
    part: int
    parts: int
    walk: int = 0
    after: Position | None = None
    report: VerifyReport = field(default_factory=VerifyReport)
    started: int = field(default_factory=now_ms)

    def saved(self) -> dict[str, Any]:
        return {
            "plan": self.plan["id"],
            "walk": self.walk,
            "after": self.after,
            "report": self.report.saved(),
            "started": self.started,
            "saved": now_ms(),
        }


def verify_part(
    backend: Backend,
    *,
    holder: str,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    progress: Progress | None = None,
) -> VerifyRun:
    """Verify part ``part`` of ``parts`` (1 of 1: everything), going on where an unfinished
    run of it stopped unless ``restart``. BusyError when another process runs this part."""
    if not 1 <= part <= parts:
        raise ValueError(f"part {part} of {parts}: expected 1 <= K <= N")
    books = CheckBooks(backend)
    name = f"verify/{part}/{parts}"
    lease = f"verify-lease/{part}/{parts}"
    busy = books.take_lease(lease, holder, LEASE_MS)
    if busy:
        raise BusyError(f"part {part} of {parts} of a verify runs in another process ({busy})")
    began = time.monotonic()
    try:
        state, resumed = _state(backend, books, name, part, parts, restart)
        _walk(backend, books, state, lambda: books.take_lease(lease, holder, LEASE_MS), progress)
        finish(backend, state.report, whole=parts == 1)
        _finished(books, state)
    finally:
        books.release_lease(lease, holder)
    return VerifyRun(state.report, part, parts, resumed, time.monotonic() - began)


def _state(
    backend: Backend, books: CheckBooks, name: str, part: int, parts: int, restart: bool
) -> tuple[_State, str]:
    plan = _plan(backend, books, parts)
    saved = None if restart else books.read(name)
    if saved and saved.get("plan") == plan["id"] and not saved.get("finished"):
        state = _State(name, plan, part, parts, int(saved["walk"]), saved.get("after"))
        state.report = VerifyReport.restored(saved["report"])
        state.started = int(saved.get("started", now_ms()))
        where = WALKS[state.walk].name if state.walk < len(WALKS) else "the end"
        checked = state.report.snapshots + state.report.files + state.report.pieces
        return state, f"{where}, after {checked:,} snapshots, files and pieces"
    state = _State(name, plan, part, parts)
    if part == 1:
        start_whole(backend, state.report)
    return state, ""


def _plan(backend: Backend, books: CheckBooks, parts: int) -> dict[str, Any]:
    """Where the parts are cut in each table: the same for every part of one verify."""
    if parts == 1:
        return {"id": "whole", "cuts": {}}
    found = books.read(f"verify-plan/{parts}")
    if found is not None and set(found.get("cuts", {})) == {walk.name for walk in WALKS}:
        return found
    cuts = {
        walk.name: [backend.position_at(walk.table, Fraction(k, parts)) for k in range(1, parts)]
        for walk in WALKS
    }
    plan = {"id": secrets.token_hex(8), "cuts": cuts, "created": now_ms()}
    return books.open(f"verify-plan/{parts}", plan)


def _bounds(state: _State, walk: str) -> tuple[Position | None, Position | None]:
    if state.parts == 1:
        return None, None
    cuts = state.plan["cuts"][walk]
    lower = cuts[state.part - 2] if state.part > 1 else None
    upper = cuts[state.part - 1] if state.part < state.parts else None
    return lower, upper


def _walk(
    backend: Backend,
    books: CheckBooks,
    state: _State,
    renew: Callable[[], str],
    progress: Progress | None,
) -> None:
    saved_at = time.monotonic()

    def done(at: Position) -> None:
        nonlocal saved_at
        state.after = at
        if progress is not None and WALKS[state.walk].counts:
            progress(WALKS[state.walk].counts)
        if (time.monotonic() - saved_at) * 1000 >= SAVE_MS:
            books.write(state.name, state.saved())
            renew()
            saved_at = time.monotonic()

    # Saved only between two partitions, where the report and the place agree: a stop
    # (Ctrl-C, a kill) in the middle of one goes on from the last save, that partition
    # and those after it checked again, none counted twice.
    while state.walk < len(WALKS):
        walk = WALKS[state.walk]
        lower, upper = _bounds(state, walk.name)
        after = state.after if state.after is not None else lower
        walk_range(backend, walk, after, upper, state.report, done)
        state.walk, state.after = state.walk + 1, None
        books.write(state.name, state.saved())


def _finished(books: CheckBooks, state: _State) -> None:
    """The run is over: its book goes (one part: marked finished; the last part to
    finish removes the plan and the parts' books)."""
    if state.parts == 1:
        books.drop(state.name)
        return
    books.write(state.name, {"plan": state.plan["id"], "finished": now_ms()})
    names = [f"verify/{k}/{state.parts}" for k in range(1, state.parts + 1)]
    books_now = [books.read(name) or {} for name in names]
    if all(b.get("plan") == state.plan["id"] and b.get("finished") for b in books_now):
        books.drop(f"verify-plan/{state.parts}")
        for name in names:
            books.drop(name)


def parse_part(text: str) -> tuple[int, int]:
    """``K/N`` as (K, N); ValueError naming the form."""
    try:
        k, n = (int(value) for value in text.split("/"))
    except ValueError:
        raise ValueError(f"expected K/N (part K of N, e.g. 2/4), got {text!r}") from None
    if not 1 <= k <= n or n > 1024:
        raise ValueError(f"expected K/N with 1 <= K <= N <= 1024, got {text!r}")
    return k, n
