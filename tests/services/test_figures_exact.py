"""The kept figures (facts, day summaries, month figures: ``stats``, ``/api/stats``, the
Statistics page) equal a whole count of the store after stores, deletes, retention,
``$snapshot.history``, several writers at once and the Java service's writes (these via
the reconcile), on SQLite and on Cassandra. Each check counts the figures once before the
change, so that the kept ones are what is tested, not a first count."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from collections import Counter
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.conventions import iter_files, modified_time, origin_id
from imixs_archive.runtime import open_archive
from imixs_archive.services.reconcile import reconcile
from imixs_archive.services.retention import Policy, run_retention
from imixs_archive.services.statistics import archive_stats
from imixs_archive.storage.model import ARCHIVE_FILES, SNAPSHOTS, SNAPSHOTS_BY_UNIQUEID
from support.java_rows import java_store_snapshot
from support.snapshots import make_snapshot

pytestmark = pytest.mark.both_stores  # store-facing: several writers at once

A = "aaaaaaaa-1111-4111-8111-111111111111"
B = "bbbbbbbb-2222-4222-8222-222222222222"
C = "cccccccc-3333-4333-8333-333333333333"
SHARED = b"%PDF shared between instances " * 300
BERLIN = ZoneInfo("Europe/Berlin")


def snap(
    origin: str, when: dt.datetime, files: dict[str, bytes] | None = None, **items: Any
) -> Any:
    sid = f"{origin}-{int(when.timestamp() * 1000)}"
    return make_snapshot(0, origin=origin, modified=when, files=files, dollar_uniqueid=sid, **items)


def at(day: int, hour: int, minute: int = 0, offset: int = 0) -> dt.datetime:
    zone = dt.timezone(dt.timedelta(hours=offset))
    return dt.datetime(2023, 3, day, hour, minute, tzinfo=zone)


def whole_count(archive: Archive, tz: dt.tzinfo = dt.UTC) -> dict[str, Any]:
    """What the store holds, counted snapshot by snapshot (the Java service's too): the
    truth the kept figures must equal."""
    backend = archive.backend
    ids = [r["snapshot"] for r in backend.scan(SNAPSHOTS, columns=["snapshot"])]
    ids = [snapshot_id for snapshot_id in ids if snapshot_id != "0"]
    stored = {r["md5"]: r["size"] for r in backend.scan(ARCHIVE_FILES, columns=["md5", "size"])}
    used: dict[str, int] = {}
    logical = 0
    days: Counter[str] = Counter()
    for snapshot_id in ids:
        doc = archive.load(snapshot_id, with_files=False)
        days[modified_time(doc).astimezone(tz).date().isoformat()] += 1
        keys = archive.index.file_keys(snapshot_id, doc)
        for entry in iter_files(doc):  # the size as stored; the Java service's: its attribute
            size = stored.get(keys[entry.name], entry.size or 0)
            logical += size
            used.setdefault(keys[entry.name], size)
    return {
        "snapshots": len(ids),
        "instances": len({origin_id(i) for i in ids}),
        "files": len(used),
        "file_bytes": sum(used.values()),
        "logical_bytes": logical,
        "by_day": dict(sorted(days.items())),
    }


def kept(archive: Archive, tz: dt.tzinfo = dt.UTC) -> dict[str, Any]:
    stats = archive_stats(archive, tz)
    keys = ("snapshots", "instances", "files", "file_bytes", "logical_bytes", "by_day")
    return {key: stats[key] for key in keys}


def fill(archive: Archive) -> None:
    """Three instances over days with mixed offsets: a file carried forward, a file shared
    by two instances, the same content twice in one snapshot, snapshots near midnight."""
    archive.store(snap(A, at(1, 9), {"a.pdf": b"first version " * 100}))
    archive.store(
        snap(A, at(1, 23, 50, offset=0), {"a.pdf": b"first version " * 100, "s.pdf": SHARED})
    )
    archive.store(snap(A, at(2, 0, 30, offset=2), {"a.pdf": b"second version " * 100}))
    archive.store(snap(B, at(2, 12, offset=-5), {"x.pdf": SHARED, "y.pdf": SHARED}))
    archive.store(snap(B, at(3, 8), {"x.pdf": SHARED}))
    archive.store(snap(C, at(4, 22, 30, offset=1), {}, dollar_workflowgroup="Ticket"))
    archive.store(
        snap(C, at(5, 1, offset=1), {"c.pdf": b"c" * 5000}, dollar_workflowgroup="Ticket")
    )


def test_the_kept_figures_are_a_whole_count_in_any_zone(archive: Archive) -> None:
    fill(archive)
    for tz in (dt.UTC, BERLIN, ZoneInfo("America/New_York")):
        assert kept(archive, tz) == whole_count(archive, tz)
        assert kept(archive, tz) == whole_count(archive, tz)  # read back kept, not counted


def test_deletes_keep_the_figures_exact(archive: Archive) -> None:
    fill(archive)
    assert kept(archive) == whole_count(archive)  # counted and kept before the deletes
    first_of_a = snap(A, at(1, 9))["$uniqueid"][0]
    archive.delete(first_of_a)  # the instance and its first file pass on
    assert kept(archive) == whole_count(archive)
    archive.delete(snap(A, at(1, 23, 50))["$uniqueid"][0])  # the shared file's first carrier
    assert kept(archive) == whole_count(archive)
    for when in (at(2, 12, offset=-5), at(3, 8)):  # every snapshot of B
        archive.delete(snap(B, when)["$uniqueid"][0])
    assert kept(archive) == whole_count(archive)
    assert kept(archive, BERLIN) == whole_count(archive, BERLIN)


def test_retention_and_history_keep_the_figures_exact(archive: Archive) -> None:
    fill(archive)
    assert kept(archive) == whole_count(archive)
    for hour in (10, 11, 12):  # keeps the two newest of A's snapshots
        archive.store(snap(A, at(6, hour), {"a.pdf": b"kept " * 99}, dollar_snapshot__history=2))
    assert kept(archive) == whole_count(archive)
    now = dt.datetime(2040, 1, 1, tzinfo=dt.UTC)
    report = run_retention(archive, Policy.parse("group:Invoice=10y"), now=now)
    assert report.snapshots_deleted > 0
    assert whole_count(archive)["instances"] == 1  # C, of another group, is kept
    assert kept(archive) == whole_count(archive)


def test_a_java_snapshot_is_found_by_the_reconcile(archive: Archive) -> None:
    fill(archive)
    before = kept(archive)
    java_store_snapshot(archive.backend, snap(C, at(4, 9), {"j.pdf": b"java wrote this " * 50}))
    assert kept(archive) == before  # a day already kept, no stamp: not seen yet
    report = reconcile(archive)
    assert report.drift["snapshots"] == (before["snapshots"], before["snapshots"] + 1)
    assert report.drift["files"] == (before["files"], before["files"] + 1)
    assert kept(archive) == whole_count(archive)
    assert reconcile(archive).drift == {}  # nothing left to repair


def test_a_reconcile_resumes_after_the_last_day_it_finished(archive: Archive) -> None:
    fill(archive)
    kept(archive)  # counted and kept: the Java snapshot below is drift
    java_store_snapshot(archive.backend, snap(C, at(5, 9), {}))  # on a late day

    def stop_after_two(done: int, _days: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reconcile(archive, stop_after_two)
    report = reconcile(archive)
    assert report.resumed_after is not None and report.days < len(
        list(archive.days.with_snapshots())
    )
    assert report.drift["snapshots"][1] == report.drift["snapshots"][0] + 1
    assert kept(archive) == whole_count(archive)


def _store_many(settings: Settings, origins: list[str], offset: int) -> None:
    with open_archive(settings) as archive:
        for n in range(12):
            origin = origins[n % len(origins)]
            when = dt.datetime(2023, 4, 1 + n % 3, 8, offset + n, tzinfo=dt.UTC)
            files = {"s.pdf": SHARED, f"own-{offset}-{n}.pdf": bytes([offset, n]) * 700}
            archive.store(snap(origin, when, files))


def test_several_writers_at_once_keep_the_figures_exact(
    archive: Archive, store_settings: Settings
) -> None:
    """Two processes store snapshots of the same instances, sharing a file, at once."""
    fill(archive)
    assert kept(archive) == whole_count(archive)
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_store_many, args=(store_settings, [A, B, C], offset))
        for offset in (0, 30)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    if archive.storage.java_may_write:  # Cassandra: two first carriers at one moment may both count
        reconcile(archive)
    assert kept(archive) == whole_count(archive)


def test_a_process_that_deleted_what_it_stored_counts_the_next_one_anew(
    archive: Archive,
) -> None:
    """What a process remembers of the instances and files it stored (no read needed for
    the next snapshot of them) is forgotten when it deletes that snapshot."""
    file = {"only.pdf": b"only here " * 50}
    first = snap(A, at(7, 9), file)
    archive.store(first)
    assert kept(archive) == whole_count(archive)
    archive.delete(first["$uniqueid"][0])
    archive.store(snap(A, at(7, 10), file))  # the instance and the file anew
    assert kept(archive) == whole_count(archive)
    assert kept(archive)["instances"] == 1 and kept(archive)["files"] == 1


def test_a_snapshot_another_process_deleted_carries_nothing_for_the_next(
    archive: Archive,
) -> None:
    """A process remembers the instances and files it stored, so that the next snapshot
    of them needs no read; when another process deletes that snapshot meanwhile (a
    retention run, a delete beside a long import or the sync), the next one brings the
    instance and the file anew. (The torture found this: ``instances`` and ``files`` of
    ``stats`` short by the instances retention emptied while an import went on.)"""
    file = {"only.pdf": b"only here " * 50}
    first = snap(A, at(7, 9), file)
    archive.store(first)
    assert kept(archive) == whole_count(archive)
    with Archive(archive.backend) as other:  # another process: it knows nothing of this one
        other.delete(first["$uniqueid"][0])
    archive.store(snap(A, at(7, 10), file))  # the instance and the file anew
    if not archive.storage.reads_are_local:  # Cassandra: memory trusted, the reconcile repairs
        reconcile(archive)
    assert kept(archive) == whole_count(archive)
    assert kept(archive)["instances"] == 1 and kept(archive)["files"] == 1


def test_an_instance_whose_earliest_snapshot_died_part_way_is_counted_by_the_reconcile(
    archive: Archive,
) -> None:
    """A writer killed between a snapshot's index rows and its ``snapshots`` row leaves an
    id in the instance's index that is no snapshot; when it is the instance's earliest,
    the snapshot after it brought the instance. (The torture found this on Cassandra:
    ``instances`` one short after ``stats --reconcile``.)"""
    fill(archive)
    assert kept(archive) == whole_count(archive)
    died = snap(A, at(1, 8))["$uniqueid"][0]  # before every stored snapshot of A
    archive.backend.put(SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": A, "snapshot": died}])
    reconcile(archive)
    assert kept(archive) == whole_count(archive)
    assert kept(archive)["instances"] == 3
