"""The index of days that have snapshots (``archive_modified_days``).

A listing by ``$modified`` day over a long range walks this index instead of asking the
store about every calendar day, so it costs what it returns: the days that have snapshots
in the range, not the days in between. Short ranges (up to ``WALK_DAYS``) are still
walked day by day, which also sees days a Java service sharing the keyspace wrote after
the index was built. The index is built on first use from ``snapshots_by_modified`` (one
pass, once: the completion row is written last, so an interrupted build starts again);
from then on ``Archive.store`` adds each snapshot's day before its index row. Days only
the Java service wrote since are added as soon as this archive meets one of their
snapshots (``note_day``: a store of a snapshot the archive holds already, the sync's
catch-up walking past it, an event of it), and by ``add_missing_days``, which
``verify``, the census and ``stats --reconcile`` run.

Each day also has a change stamp (``archive_day_changes``): ``Archive.store`` and
``Archive.delete`` write a new one for the snapshot's day after its index row changed and
before its ``snapshots`` row does. Whoever keeps figures of a day (the analytics) reads
the stamps first, then the day's snapshots, and keeps the stamp with the figures: when the
day's stamp differs later, a snapshot of that day arrived or went since, and the figures
are counted again. A snapshot listed in the index but not complete yet is being written
(its stamp may be the one just read): figures that met one are not kept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import socket
import uuid
from collections.abc import Iterator

from imixs_archive.budget import checkpoint
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_DAY_CHANGES,
    ARCHIVE_MODIFIED_DAYS,
    SNAPSHOTS_BY_MODIFIED,
)

WALK_DAYS = 62
"""Ranges of at most this many days are walked day by day."""
DAYS = 0
COMPLETE = {"bucket": 1, "day": dt.date(1, 1, 1)}


def record_day(backend: Backend, day: dt.date) -> None:
    """Note that ``day`` has a snapshot (before its ``snapshots_by_modified`` row)."""
    backend.put(ARCHIVE_MODIFIED_DAYS, [{"bucket": DAYS, "day": day}])


def note_day(backend: Backend, day: dt.date) -> bool:
    """Add ``day`` to the index if it lacks it, and stamp it (figures kept of it are
    stale): a snapshot filed under it was met that another writer (the Java service)
    stored. One read when the day is there; whether it was added."""
    if backend.get(ARCHIVE_MODIFIED_DAYS, {"bucket": DAYS, "day": day}) is not None:
        return False
    record_day(backend, day)
    stamp_day(backend, day)
    return True


_writer: tuple[int, str] = (0, "")


def _this_writer() -> str:
    """This process's name in ``archive_day_changes`` (a new one after a fork)."""
    global _writer
    pid = os.getpid()
    if _writer[0] != pid:
        _writer = (pid, f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:8]}")
    return _writer[1]


def stamp_day(backend: Backend, day: dt.date, *more: dt.date | None) -> None:
    """Say that the snapshots of ``day`` (and of the ``more`` days given) changed: a new
    stamp of this process each, written at once."""
    writer, days = _this_writer(), dict.fromkeys(d for d in (day, *more) if d is not None)
    rows = [{"year": d.year, "day": d, "writer": writer, "stamp": uuid.uuid4().hex} for d in days]
    backend.put(ARCHIVE_DAY_CHANGES, rows)


def day_stamps(backend: Backend, first: dt.date, last: dt.date) -> dict[dt.date, str]:
    """The change stamp of each day in ``[first, last]`` that has one: a digest of the
    stamps every process wrote for it (one partition read per year, a few KB)."""
    parts: dict[dt.date, list[str]] = {}
    for year in range(first.year, last.year + 1):
        for row in backend.scan(ARCHIVE_DAY_CHANGES, {"year": year}):
            if row["day"] < first:
                continue
            if row["day"] > last:
                break
            parts.setdefault(row["day"], []).append(f"{row['writer']}={row['stamp']}")
    return {
        day: hashlib.sha256("\n".join(sorted(stamps)).encode()).hexdigest()[:32]
        for day, stamps in parts.items()
    }


def days_in(backend: Backend, first: dt.date, last: dt.date) -> Iterator[dt.date]:
    """The days of [first, last] that may have snapshots, in order: every day of a short
    range, else the days the index holds."""
    if (last - first).days < WALK_DAYS:
        day = first
        while day <= last:
            yield day
            day += dt.timedelta(days=1)
        return
    _ensure_index(backend)
    after = {"day": first - dt.timedelta(days=1)} if first > dt.date.min else None
    for row in backend.scan(ARCHIVE_MODIFIED_DAYS, {"bucket": DAYS}, start_after=after):
        checkpoint()
        if row["day"] > last:
            return
        yield row["day"]


def day_span(backend: Backend) -> tuple[dt.date, dt.date] | None:
    """The first and the last day of the index (two rows read), or None when it is empty."""
    _ensure_index(backend)
    ends = [
        next(backend.scan(ARCHIVE_MODIFIED_DAYS, {"bucket": DAYS}, limit=1, descending=d), None)
        for d in (False, True)
    ]
    if ends[0] is None or ends[1] is None:
        return None
    return ends[0]["day"], ends[1]["day"]


def add_missing_days(backend: Backend) -> list[dt.date]:
    """Add to the index the days of ``snapshots_by_modified`` it lacks, and stamp them (so
    that figures kept of them are counted again); the days added, in order. Only another
    writer leaves such days: the Java service sharing the keyspace stores its snapshots'
    index rows and never this index. One pass over ``snapshots_by_modified`` (its day
    column) and a read per day: a job that touches the archive's every row anyway runs it
    (``verify``, the census, ``stats --reconcile``)."""
    _ensure_index(backend)
    added = []
    for row in _distinct_days(backend):
        checkpoint()
        if backend.get(ARCHIVE_MODIFIED_DAYS, row) is None:
            record_day(backend, row["day"])
            stamp_day(backend, row["day"])
            added.append(row["day"])
    return sorted(added)


def _ensure_index(backend: Backend) -> None:
    if backend.get(ARCHIVE_MODIFIED_DAYS, COMPLETE) is not None:
        return
    backend.put(ARCHIVE_MODIFIED_DAYS, _distinct_days(backend))
    backend.put(ARCHIVE_MODIFIED_DAYS, [COMPLETE])


def _distinct_days(backend: Backend) -> Iterator[Row]:
    """One row per day of ``snapshots_by_modified`` (a partition's rows come together)."""
    seen = None
    for row in backend.scan(SNAPSHOTS_BY_MODIFIED, columns=["modified"]):
        if row["modified"] != seen:
            seen = row["modified"]
            yield {"bucket": DAYS, "day": seen}
