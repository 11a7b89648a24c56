"""One UTC day's snapshots with their facts, as every count of a day reads them; the
process instances met on a range of days; a range no wider than the archive's days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.facts import Fact
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.document.conventions import is_snapshot_id, origin_id
from imixs_archive.errors import ArchiveError


@dataclass
class DayFacts:
    """(snapshot id, fact) of each complete snapshot of one UTC day (``read_day_facts``),
    and whether figures counted from them may be kept."""

    day: dt.date
    found: list[tuple[str, Fact]] = field(default_factory=list)
    settled: bool = True
    """False when a snapshot had no fact yet (counted from its XML now, and written: kept
    the next time) or was being written or deleted."""
    unreadable: int = 0
    """Snapshots without a fact whose XML could not be read."""

    def __iter__(self) -> Iterator[tuple[str, Fact]]:
        return iter(self.found)


def read_day_facts(archive: Archive, day: dt.date, *, repair: bool = True) -> DayFacts:
    """The day's index partition, then its facts (a fact read after its id is complete);
    a snapshot without a fact has it counted from its XML and written (``repair``; else it
    is left out, and the figures are not settled)."""
    checkpoint()  # a request's (or serve's) budget: stops between two days
    read = DayFacts(day)
    ids = archive.days.snapshot_ids(day)
    facts = archive.facts.of_day(day)
    for snapshot_id in ids:
        if not is_snapshot_id(snapshot_id):
            continue
        fact = facts.get(snapshot_id)
        if fact is None:
            read.settled = False
            if not repair:
                continue
            try:
                fact = archive.facts.repair(snapshot_id, day)
            except ArchiveError:
                read.unreadable += 1
                continue
            if fact is None:
                continue  # not complete: being written, or being deleted
        read.found.append((snapshot_id, fact))
    return read


def within_archive(
    archive: Archive, first: dt.date | None, last: dt.date | None, today: dt.date
) -> tuple[dt.date, dt.date] | None:
    """The local days ``[first, last]`` (the archive's whole span where open) no wider
    than the days that may have snapshots: from the day index's first day (less one: a
    UTC day may be the local day before) to its last or ``today`` (plus one). A range to
    a far year reads the months the archive has, not the calendar's. None when the
    archive is empty or nothing of the range is left."""
    span = archive.days.span()
    if span is None:
        return None
    lo = span[0] - dt.timedelta(days=1)
    hi = max(span[1], today) + dt.timedelta(days=1)
    lo, hi = max(first or lo, lo), min(last or hi, hi)
    return (lo, hi) if lo <= hi else None


def instances_on_days(
    archive: Archive,
    first: dt.date,
    last: dt.date,
    keep: Callable[[str, Fact | None], bool],
) -> Iterator[list[str]]:
    """The snapshot ids (oldest first) of each process instance with a snapshot on the UTC
    days ``[first, last]`` that ``keep`` (given its id and fact, None when it has none)
    accepts: found from the day index and the facts, no snapshot read; the instances' ids
    are held as a set, one instance's snapshot ids at a time."""
    origins: set[str] = set()
    for day in archive.days.with_snapshots(first, last):
        facts = archive.facts.of_day(day)
        for snapshot_id in archive.days.snapshot_ids(day):
            if is_snapshot_id(snapshot_id) and keep(snapshot_id, facts.get(snapshot_id)):
                origins.add(origin_id(snapshot_id))
    for origin in sorted(origins):
        ids = archive.index.instance_ids(origin)
        if ids:
            yield ids
