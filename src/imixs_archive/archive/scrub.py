"""The scrub: ``verify`` a slice at a time, so that everything stored is read again and
checked within a period (``ARCHIVE_SCRUB_PERIOD``, 30 days by default), as ZFS scrubs a
pool and restic's ``check --read-data-subset`` reads a part of a repository per run.

A *cycle* walks every table of ``verify`` (``verify.py``) from its start to its end in the
store's range order. It is paced by time: a slice run checks, in every table, what is due
by then (the share of the period the cycle has been running, plus one interval ahead), so
a cycle ends within the period however often the slices run (``serve`` every
``ARCHIVE_SCRUB_INTERVAL``, or ``imixs-archive verify --slice`` from a timer), and a slice
missed is caught up by the next. Everything stored when a cycle starts is checked before
it ends; what is stored later, by that cycle or the next.

The store's own file is checked a table at a time (``Backend.file_problems``: SQLite's
``quick_check`` of one table and its indexes; nothing on Cassandra, whose nodes check
their own files): each slice checks the tables due by then in the order of
``storage/model.py``, so every table is checked once a cycle, within the period.

The ``scrub`` book (``archive_checks``) records where the cycle stands in each table
(saved every few seconds: a slice stopped goes on there), which shares of the archive were
checked when (its coverage), when the last cycle ended, and the problems found, each with
the table and place it was found at: a later slice that checks that place again drops it
when it is gone. One process scrubs at a time (the ``scrub-lease`` book); the others skip.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.store_damage import check_file
from imixs_archive.archive.verify import WALKS, Walk, walk_range
from imixs_archive.archive.verify_report import LISTED, VerifyReport
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import TABLES
from imixs_archive.timezones import now_ms

BOOK = "scrub"
LEASE = "scrub-lease"
LEASE_MS = 120_000
SAVE_MS = 5_000
"""How often a slice records where it stands (and renews its lease)."""
END = "end"
"""A walk's cursor once it reached the end of its table in this cycle."""
FILE_WALK = "file"
"""The book's name for the checks of the store's file: its cursor counts the tables
checked this cycle; a finding's place is its table."""


@dataclass
class ScrubReport(Jsonable):
    """What one slice did."""

    cycle: int = 0
    share_from: float = 0.0
    share_to: float = 0.0
    """The share of every table the cycle had reached before and after this slice."""
    snapshots: int = 0
    files: int = 0
    pieces: int = 0
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)
    """Problems this slice found (listed up to 1,000)."""
    problem_count: int = 0
    disagreeing: dict[str, int] = field(default_factory=dict)
    """Tables whose rows disagree with the snapshots, with how many (``VerifyReport``)."""
    damaged: dict[str, int] = field(default_factory=dict)
    """Tables the store's check of its file found damaged, with how many problems."""
    cycle_finished: bool = False
    stopped: bool = False
    """Stopped before the end of its slice (the next slice goes on where it stood)."""
    busy: str = ""
    """Why nothing was done: the process that scrubs."""
    seconds: float = 0.0


@dataclass
class _Slice:
    """One slice run: its report, its state, its pacing."""

    backend: Backend
    books: CheckBooks
    state: dict[str, Any]
    holder: str
    rate: float
    stop: threading.Event
    report: VerifyReport = field(default_factory=lambda: VerifyReport(places=[]))
    started: float = field(default_factory=time.monotonic)
    saved_at: float = field(default_factory=time.monotonic)
    listed: int = 0
    """Problems of ``report`` already merged into the state's findings."""


class Stopped(Exception):
    """A slice asked to stop (``serve`` closing)."""


def fresh_state(now: int) -> dict[str, Any]:
    return {
        "cycle": 1,
        "cycle_started": now,
        "share": 0.0,
        "cursors": {},
        "coverage": [],
        "findings": [],
        "unlisted": 0,
        "last_cycle": None,
        "last_run": None,
    }


def scrub_slice(
    backend: Backend,
    *,
    period: float,
    interval: float,
    holder: str,
    rate: float = 0.0,
    stop: threading.Event | None = None,
    now: Callable[[], int] = now_ms,
    walks: Sequence[Walk] | None = None,
) -> ScrubReport:
    """Check what is due of the current cycle (see the module's text). ``period`` and
    ``interval`` in seconds; ``rate``: bytes read per second at most (0: no limit);
    ``walks``: those of ``verify.WALKS`` and of the layers above (``verify.verify``)."""
    books = CheckBooks(backend)
    busy = books.take_lease(LEASE, holder, LEASE_MS)
    if busy:
        return ScrubReport(busy=f"another process scrubs ({busy})")
    try:
        state = books.read(BOOK) or fresh_state(now())
        run = _Slice(backend, books, state, holder, rate, stop or threading.Event())
        return _run(run, period, interval, now, tuple(walks or WALKS))
    finally:
        books.release_lease(LEASE, holder)


def _run(
    run: _Slice, period: float, interval: float, now: Callable[[], int], walks: Sequence[Walk]
) -> ScrubReport:
    state = run.state
    started_ms = now()
    # a clock set back (or a cycle begun by another machine's clock ahead) counts as now
    elapsed = max(0, started_ms - int(state["cycle_started"])) / 1000 + max(interval, 0.0)
    due = min(Fraction(1), Fraction(elapsed / max(period, 1.0)).limit_denominator(10**9))
    report = ScrubReport(cycle=int(state["cycle"]), share_from=float(state["share"]))
    try:
        for walk in walks:
            cursors = state["cursors"]
            if cursors.get(walk.name) == END:
                continue
            upto = None if due >= 1 else run.backend.position_at(walk.table, due)
            after = cursors.get(walk.name)
            if after is not None and upto is not None and not _within(upto, after, None):
                continue  # a stopped slice went past what is due now
            walk_range(run.backend, walk, after, upto, run.report, _done(run, walk.name))
            _merge(run, walk.name, cursors.get(walk.name), upto)
            cursors[walk.name] = END if upto is None else upto
        _check_files(run, due)
    except Stopped:
        report.stopped = True
    reached = float(state["share"])
    if not report.stopped:
        _covered(state, reached, float(due), now(), period)
        state["share"] = reached = float(due)
        if due >= 1:
            report.cycle_finished = True
            _next_cycle(state, now())
    state["last_run"] = {"at": now(), "problems": run.report.problem_count}
    run.books.write(BOOK, state)
    return _summary(report, run.report, reached, time.monotonic() - run.started)


def _check_files(run: _Slice, due: Fraction) -> None:
    """The store's check of the tables due by now (``FILE_WALK`` in the book: how many of
    ``TABLES`` this cycle checked), each table's findings replacing the ones it had."""
    names = [table.name for table in TABLES]
    cursors = run.state["cursors"]
    done = int(cursors.get(FILE_WALK, 0))
    upto = min(len(names), math.ceil(due * len(names)))
    for name in names[done:upto]:
        if run.stop.is_set():
            raise Stopped
        run.report.where = (FILE_WALK, name)
        check_file(run.backend, run.report, table=name)
        run.report.where = None
        _merge_file(run, name)
        cursors[FILE_WALK] = done = done + 1


def _merge_file(run: _Slice, table: str) -> None:
    kept = [f for f in run.state["findings"] if (f["walk"], f["at"]) != (FILE_WALK, table)]
    _keep_new(run, kept)


def _done(run: _Slice, walk: str) -> Callable[[Position], None]:
    """After each partition: keep to the rate, record where the slice stands now and
    then, stop when asked."""

    def done(at: Position) -> None:
        if run.rate > 0:
            ahead = run.report.bytes_read / run.rate - (time.monotonic() - run.started)
            if ahead > 0:
                run.stop.wait(min(ahead, 5.0))
        if run.stop.is_set():
            run.report.settle(wait=True)  # what was found before the place is kept
            _merge(run, walk, run.state["cursors"].get(walk), at)
            run.state["cursors"][walk] = at
            raise Stopped
        if (time.monotonic() - run.saved_at) * 1000 >= SAVE_MS:
            run.report.settle(wait=True)
            _merge(run, walk, run.state["cursors"].get(walk), at)
            run.state["cursors"][walk] = at
            run.books.write(BOOK, run.state)
            run.books.take_lease(LEASE, run.holder, LEASE_MS)
            run.saved_at = time.monotonic()

    return done


def _merge(run: _Slice, walk: str, after: Position | None, upto: Position | None) -> None:
    """The findings of ``walk`` between ``after`` and ``upto`` are what this slice found
    there: those recorded earlier in that range go, the new ones come."""
    kept = [
        found
        for found in run.state["findings"]
        if found["walk"] != walk or not _within(found["at"], after, upto)
    ]
    _keep_new(run, kept)


def _keep_new(run: _Slice, kept: list[dict[str, Any]]) -> None:
    """The findings are ``kept`` and the problems this slice found since the last time."""
    state, report = run.state, run.report
    places = report.places or []
    stamp = now_ms()
    for text, (where, at) in zip(report.problems[run.listed :], places[run.listed :], strict=True):
        if len(kept) < LISTED:
            kept.append({"walk": where, "at": at, "text": text, "found": stamp})
        else:
            state["unlisted"] = int(state.get("unlisted", 0)) + 1
    run.listed = len(report.problems)
    state["findings"] = kept


def _within(at: Position, after: Position | None, upto: Position | None) -> bool:
    try:
        return (after is None or at > after) and (upto is None or at <= upto)
    except TypeError:  # a place of another store's kind: not comparable, checked again
        return True


def _covered(state: dict[str, Any], start: float, end: float, at: int, period: float) -> None:
    """Record that the shares from ``start`` to ``end`` were checked at ``at`` (ms): the
    coverage keeps, for each share, the last time it was checked within the period."""
    horizon = at - period * 1000
    spans = [s for s in state["coverage"] if s[2] >= horizon]
    kept: list[list[float]] = []
    for lo, hi, when in spans:
        if hi <= start or lo >= end:
            kept.append([lo, hi, when])
            continue
        if lo < start:
            kept.append([lo, start, when])
        if hi > end:
            kept.append([end, hi, when])
    if end > start:
        kept.append([start, end, at])
    kept.sort()
    merged: list[list[float]] = []
    for span in kept:  # neighbours checked close together: one span, the older time
        last = merged[-1] if merged else None
        if last and last[1] >= span[0] and abs(last[2] - span[2]) < period * 1000 / 50:
            last[1], last[2] = max(last[1], span[1]), min(last[2], span[2])
        else:
            merged.append(span)
    state["coverage"] = merged


def covered_share(state: dict[str, Any], at: int, period: float) -> float:
    """The share of the archive checked within the period before ``at`` (ms)."""
    horizon = at - period * 1000
    spans = state.get("coverage", [])
    return min(1.0, float(sum(hi - lo for lo, hi, when in spans if when >= horizon)))


def _next_cycle(state: dict[str, Any], at: int) -> None:
    state["last_cycle"] = {
        "cycle": state["cycle"],
        "started": state["cycle_started"],
        "finished": at,
        "problems": len(state["findings"]) + int(state.get("unlisted", 0)),
    }
    state.update(cycle=int(state["cycle"]) + 1, cycle_started=at, share=0.0, cursors={})


def _summary(
    report: ScrubReport, checked: VerifyReport, share: float, seconds: float
) -> ScrubReport:
    report.share_to = share
    report.snapshots, report.files, report.pieces = checked.snapshots, checked.files, checked.pieces
    report.bytes_read = checked.bytes_read
    report.problems, report.problem_count = checked.problems, checked.problem_count
    report.disagreeing, report.damaged = checked.disagreeing, checked.damaged
    report.seconds = seconds
    return report


def scrub_status(backend: Backend, period: float, at: int | None = None) -> dict[str, Any]:
    """Where the scrub stands, for the Monitor, /metrics and ``verify --slice``: the cycle
    and how far it is, the share checked within the period, the last cycle, the findings
    (listed up to 1,000, counted beyond)."""
    state = CheckBooks(backend).read(BOOK)
    at = now_ms() if at is None else at
    if state is None:
        return {"started": False, "period_seconds": period}
    elapsed = max(0, at - int(state["cycle_started"])) / 1000
    findings = list(state.get("findings", []))
    return {
        "started": True,
        "period_seconds": period,
        "cycle": state["cycle"],
        "cycle_started": state["cycle_started"],
        "cycle_share": float(state["share"]),
        "due_share": min(1.0, elapsed / max(period, 1.0)),
        "covered_share": covered_share(state, at, period),
        "last_cycle": state.get("last_cycle"),
        "last_run": state.get("last_run"),
        "findings": findings,
        "finding_count": len(findings) + int(state.get("unlisted", 0)),
    }
