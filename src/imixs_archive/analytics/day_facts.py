"""One UTC day's snapshots with their facts, as every count of a day reads them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.facts import Fact
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.document.conventions import is_snapshot_id
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


def read_day_facts(archive: Archive, day: dt.date) -> DayFacts:
    """The day's index partition, then its facts (a fact read after its id is complete);
    a snapshot without a fact has it counted from its XML and written."""
    checkpoint()  # a request's (or serve's) budget: stops between two days
    read = DayFacts(day)
    ids = archive.day_snapshot_ids(day)
    facts = archive.day_facts(day)
    for snapshot_id in ids:
        if not is_snapshot_id(snapshot_id):
            continue
        fact = facts.get(snapshot_id)
        if fact is None:
            read.settled = False
            try:
                fact = archive.repair_fact(snapshot_id, day)
            except ArchiveError:
                read.unreadable += 1
                continue
            if fact is None:
                continue  # not complete: being written, or being deleted
        read.found.append((snapshot_id, fact))
    return read
