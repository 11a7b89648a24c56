"""The archive's reads by UTC day of ``$modified`` (``Archive.days``): which days have
snapshots, each day's change stamp, the complete snapshots of a range of days (UTC or of
a time zone) in time order. Over the day index (``days.py``) and ``snapshots_by_modified``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

from imixs_archive.archive import snapshot_reads as reads
from imixs_archive.archive.days import add_missing_days, day_span, day_stamps, days_in, note_day
from imixs_archive.budget import checkpoint
from imixs_archive.document.conventions import is_snapshot_id, modified_time, snapshot_order
from imixs_archive.document.model import Document
from imixs_archive.errors import NotFoundError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import SNAPSHOTS_BY_MODIFIED

MAX_DAYS_KNOWN = 100_000
"""Days a process remembers the index holds (then it forgets them, and reads again)."""


class DayReads:
    """The days of one archive. ``load``: a snapshot without its files (``Archive.load``,
    which shares the memory for large snapshots); NotFoundError when it is gone."""

    def __init__(
        self, backend: Backend, load: Callable[[str], Document], known: set[dt.date]
    ) -> None:
        """``known``: days this process knows the index holds (shared with ``Archive``)."""
        self._backend = backend
        self._load = load
        self._known = known

    def note(self, day: dt.date) -> bool:
        """Add ``day`` to the day index if it lacks it (``days.py note_day``): a snapshot
        filed under it was met, which the Java service may have stored. Once per day and
        process; whether it was added."""
        if day in self._known:
            return False
        added = note_day(self._backend, day)
        if len(self._known) > MAX_DAYS_KNOWN:
            self._known.clear()
        self._known.add(day)
        return added

    def with_snapshots(
        self, first: dt.date = dt.date.min, last: dt.date = dt.date.max
    ) -> Iterator[dt.date]:
        """The UTC days of ``[first, last]`` that may have snapshots, in order (the day
        index: a day whose snapshots were all deleted stays in it)."""
        return days_in(self._backend, first, last)

    def add_missing(self) -> list[dt.date]:
        """Add the days only another writer (the Java service) stored snapshots of to the
        day index; the days added (``days.py``)."""
        return add_missing_days(self._backend)

    def span(self) -> tuple[dt.date, dt.date] | None:
        """The first and the last UTC day of the day index, or None for an empty archive."""
        return day_span(self._backend)

    def stamps(self, first: dt.date, last: dt.date) -> dict[dt.date, str]:
        """Each day's change stamp (``days.py``): read it before the day's snapshots."""
        return day_stamps(self._backend, first, last)

    def snapshot_ids(self, day: dt.date) -> list[str]:
        """The ids filed under one UTC day of ``$modified`` (complete or not)."""
        return reads.day_snapshot_ids(self._backend, day)

    def iter_days(self, first: dt.date, last: dt.date) -> Iterator[tuple[dt.date, str]]:
        """(day, snapshot id) of complete snapshots whose $modified is in [first, last]:
        by day, and within a day in time order (:func:`snapshot_order`: the id's
        millisecond suffix is the time the snapshot was taken; the store files a day's ids
        by id, i.e. by process instance, so a day's ids, keys only, are read and sorted)."""
        for day in days_in(self._backend, first, last):
            checkpoint()
            rows = self._backend.scan(
                SNAPSHOTS_BY_MODIFIED, {"modified": day}, columns=["snapshot"]
            )
            for snapshot_id in sorted((row["snapshot"] for row in rows), key=_time_order):
                if reads.is_archived(self._backend, snapshot_id):
                    yield day, snapshot_id

    def iter_local_days(
        self,
        first: dt.date,
        last: dt.date,
        tz: dt.tzinfo,
        *,
        resume: tuple[dt.date, str] | None = None,
    ) -> Iterator[tuple[dt.date, str]]:
        """:meth:`iter_modified` over the days ``first``..``last`` of the time zone ``tz``:
        local midnight to local midnight (23 or 25 hours on the days clocks change)."""
        start = dt.datetime.combine(first, dt.time(0), tz).astimezone(dt.UTC)
        end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(0), tz)
        return self.iter_modified(start, end.astimezone(dt.UTC), resume=resume)

    def iter_modified(
        self,
        start: dt.datetime,
        end: dt.datetime,
        *,
        resume: tuple[dt.date, str] | None = None,
    ) -> Iterator[tuple[dt.date, str]]:
        """(UTC day, snapshot id) of complete snapshots whose ``$modified`` is in
        [``start``, ``end``) (aware instants, e.g. local midnights of any zone), in the
        order of :meth:`iter_days`. The index is by UTC day: only the snapshots of the
        first and last UTC day, which the range may cover in part, are read to check.
        ``resume``: go on after this (day, snapshot id) of an earlier page."""
        first = start.astimezone(dt.UTC).date()
        last = (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
        if resume is not None:
            first = max(first, resume[0])
        for day, snapshot_id in self.iter_days(first, last):
            if (
                resume is not None
                and day == resume[0]
                and _time_order(snapshot_id) <= _time_order(resume[1])
            ):
                continue
            midnight = dt.datetime.combine(day, dt.time(0), dt.UTC)
            if not start <= midnight or midnight + dt.timedelta(days=1) > end:
                try:
                    modified = modified_time(self._load(snapshot_id))
                except NotFoundError:
                    continue  # deleted meanwhile
                if not start <= modified < end:
                    continue
            yield day, snapshot_id


def _time_order(snapshot_id: str) -> tuple[int, str]:
    """:func:`snapshot_order`, also for an id of another form a Java service filed (first)."""
    return snapshot_order(snapshot_id) if is_snapshot_id(snapshot_id) else (0, snapshot_id)
