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
the last part to finish removes the plan (lease, plan and books: ``part_runs.py``). Only
part 1 reports the store's own findings and checks its file (``store_damage.py``), and
what needs the whole archive (the bytes ``gc`` would free) only a verify in one part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.part_runs import (
    SaveClock,
    book_name,
    finish_part,
    part_bounds,
    part_lease,
    part_plan,
    resumable,
)
from imixs_archive.archive.verify import (
    WALKS,
    Progress,
    Walk,
    finish,
    start_whole,
    walk_range,
)
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.storage.base import Backend, Position
from imixs_archive.timezones import now_ms

JOB = "verify"


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
    full: bool = False,
    progress: Progress | None = None,
    walks: Sequence[Walk] | None = None,
) -> VerifyRun:
    """Verify part ``part`` of ``parts`` (1 of 1: everything), going on where an unfinished
    run of it stopped unless ``restart``. BusyError when another process runs this part.
    ``full``: part 1 checks the store's file thoroughly (SQLite's ``integrity_check``, which
    compares every index of the file with its table) instead of quickly; ``walks``: those
    of ``verify.WALKS`` and of the layers above (``verify.verify``)."""
    books = CheckBooks(backend)
    began = time.monotonic()
    walks = tuple(walks or WALKS)
    with part_lease(books, JOB, part, parts, holder) as renew:
        state, resumed = _state(backend, books, part, parts, restart, full, walks)
        _walk(backend, books, state, renew, progress, walks)
        finish(backend, state.report, whole=parts == 1)
        finish_part(books, JOB, state.plan, part, parts)
    return VerifyRun(state.report, part, parts, resumed, time.monotonic() - began)


def _state(
    backend: Backend,
    books: CheckBooks,
    part: int,
    parts: int,
    restart: bool,
    full: bool,
    walks: Sequence[Walk],
) -> tuple[_State, str]:
    plan = part_plan(backend, books, JOB, {walk.name: walk.table for walk in walks}, parts)
    name = book_name(JOB, part, parts)
    saved = None if restart else books.read(name)
    if saved is not None and resumable(saved, plan):
        state = _State(name, plan, part, parts, int(saved["walk"]), saved.get("after"))
        state.report = VerifyReport.restored(saved["report"])
        state.started = int(saved.get("started", now_ms()))
        where = walks[state.walk].name if state.walk < len(walks) else "the end"
        checked = state.report.snapshots + state.report.files + state.report.pieces
        return state, f"{where}, after {checked:,} snapshots, files and pieces"
    state = _State(name, plan, part, parts)
    if part == 1:
        start_whole(backend, state.report, full=full)
    return state, ""


def _walk(
    backend: Backend,
    books: CheckBooks,
    state: _State,
    renew: Callable[[], str],
    progress: Progress | None,
    walks: Sequence[Walk],
) -> None:
    clock = SaveClock()

    def done(at: Position) -> None:
        state.after = at
        if progress is not None and walks[state.walk].counts:
            progress(walks[state.walk].counts)
        if clock.due():
            state.report.settle(wait=True)  # what was found before the place is saved
            books.write(state.name, state.saved())
            renew()

    # Saved only between two partitions, where the report and the place agree: a stop
    # (Ctrl-C, a kill) in the middle of one goes on from the last save, that partition
    # and those after it checked again, none counted twice.
    while state.walk < len(walks):
        walk = walks[state.walk]
        lower, upper = part_bounds(state.plan, walk.name, state.part, state.parts)
        after = state.after if state.after is not None else lower
        walk_range(backend, walk, after, upper, state.report, done)
        state.walk, state.after = state.walk + 1, None
        books.write(state.name, state.saved())
