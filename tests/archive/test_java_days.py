"""Days only the Java service wrote (issue 31, item 4; java-beside.md N8): the day index is
built once, and afterwards only this archive's stores add days, so a snapshot the Java
service stores on a day nobody else did is missed by listings over 62 days, ranged
backups and analytics. ``verify``, the census and ``stats --reconcile`` add such days.
On both backends, with rows written as Java's ``DataService`` writes them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.recovery.backup import DayRange, backup
from imixs_archive.services.reconcile import reconcile
from imixs_archive.services.statistics import take_census
from support.java_rows import java_store_snapshot
from support.snapshots import make_snapshot

OURS = dt.datetime(2023, 5, 1, 9, tzinfo=dt.UTC)
JAVAS = dt.datetime(2024, 3, 1, 9, tzinfo=dt.UTC)
FIRST, LAST = dt.date(2023, 1, 1), dt.date(2024, 12, 31)
JAVA_ORIGIN = "0a0a0a0a-0000-4000-8000-00000000000a"


def ranged(archive: Archive) -> list[str]:
    """The snapshot ids a listing of the two years gives (over 62 days: the index)."""
    return [sid for _day, sid in archive.days.iter_local_days(FIRST, LAST, dt.UTC)]


def with_a_java_day(archive: Archive) -> str:
    """One snapshot of ours (the index is built), then one Java stores on a new day."""
    ours = make_snapshot(1, modified=OURS)
    archive.store(ours)
    assert ranged(archive) == [ours.get_first("$uniqueid")]  # the index exists now
    doc = make_snapshot(2, origin=JAVA_ORIGIN, modified=JAVAS)
    doc["$uniqueid"] = f"{JAVA_ORIGIN}-{int(JAVAS.timestamp() * 1000)}"
    java_id = java_store_snapshot(archive.backend, doc)
    assert java_id not in ranged(archive)  # the gap, as the audit replayed it
    return java_id


def test_verify_adds_the_days_only_java_wrote_and_says_so(archive: Archive) -> None:
    java_id = with_a_java_day(archive)
    report = archive.verify()
    assert report.ok
    assert any("2024-03-01" in w and "day index" in w for w in report.warnings)
    assert java_id in ranged(archive)
    assert not any("day index" in w for w in archive.verify().warnings)  # once


def test_the_census_adds_them(archive: Archive) -> None:
    java_id = with_a_java_day(archive)
    take_census(archive)
    assert java_id in ranged(archive)


def test_a_reconcile_adds_them_and_counts_their_snapshots(archive: Archive) -> None:
    java_id = with_a_java_day(archive)
    report = reconcile(archive, restart=True)
    assert report.days_indexed == ["2024-03-01"]
    assert java_id in ranged(archive)
    assert report.after["snapshots"] == 2 and report.days == 2
    assert reconcile(archive, restart=True).days_indexed == []


def test_a_ranged_backup_has_the_java_snapshot_once_its_day_is_added(
    archive: Archive, tmp_path: Path
) -> None:
    with_a_java_day(archive)
    before = backup(archive, tmp_path / "before", days=DayRange(FIRST, LAST))
    assert before.written == 1  # the audit's replay: 1 file instead of 2
    archive.days.add_missing()
    after = backup(archive, tmp_path / "after", days=DayRange(FIRST, LAST))
    assert after.written == 2 and after.failed == 0


def test_storing_a_snapshot_java_stored_adds_its_day_at_once(archive: Archive) -> None:
    """The audit's third replay (java-audit-3 N8): the snapshot met again (an import, the
    sync's event for it) finds it archived, writes nothing, and files its day at once."""
    java_id = with_a_java_day(archive)
    again = archive.load(java_id)
    stamps = archive.days.stamps(JAVAS.date(), JAVAS.date())
    result = archive.store(again)
    assert not result.new
    assert java_id in ranged(archive)
    assert archive.days.stamps(JAVAS.date(), JAVAS.date()) != stamps  # figures recounted
    assert archive.days.add_missing() == []  # nothing left for the census
