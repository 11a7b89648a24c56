"""Export one store into another: equal, resumable, verified."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from imixs_archive.archive.service_state import load_state, save_state
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.model import Document
from imixs_archive.recovery.export import export
from imixs_archive.services.retention import Policy, run_retention
from imixs_archive.storage.model import DOCUMENTS_DATA
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.records import FailedEvent
from support.snapshots import ORIGIN, make_snapshot

PDF = random.Random(3).randbytes(900_000)
AHEAD = "0abcdef0-0000-4000-8000-0000000000ff"


def _fill(archive: Archive) -> list[str]:
    ids = [
        archive.store(
            make_snapshot(s, files={"a.pdf": PDF}, dollar_snapshot__history=9)
        ).snapshot_id
        for s in range(4)
    ]
    save_state(archive.backend, Document({"sync.point": 1700000000000, "sync.count": 4}))
    return ids


def test_export_copies_everything(archive: Archive, tmp_path: Path) -> None:
    ids = _fill(archive)
    with SQLiteBackend(tmp_path / "target") as backend:
        target = Archive(backend)
        summary = export(archive, target)
        assert (summary.copied, summary.present, summary.failed) == (4, 0, 0)
        for snapshot_id in ids:
            assert target.load(snapshot_id) == archive.load(snapshot_id)
        assert load_state(backend)["sync.count"] == [4]
        assert verify(backend).ok
        again = export(archive, target)
        assert (again.copied, again.present) == (0, 4)


def test_export_resumes_after_dying(archive: Archive, tmp_path: Path) -> None:
    ids = _fill(archive)
    with SQLiteBackend(tmp_path / "target") as backend:
        target = Archive(backend)
        seen: list[str] = []

        def die_after_two(snapshot_id: str) -> None:
            seen.append(snapshot_id)
            if len(seen) == 2:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            export(archive, target, on_snapshot=die_after_two)
        summary = export(archive, target)
        assert (summary.copied, summary.present) == (2, 2)
        assert sorted(target.index.iter_snapshot_ids()) == sorted(ids)


def test_export_reports_corrupt_source_data(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    row = next(archive.backend.scan(DOCUMENTS_DATA))
    archive.backend.put(
        DOCUMENTS_DATA, [{"data_id": row["data_id"], "data": b"X" + row["data"][1:]}]
    )
    with SQLiteBackend(tmp_path / "target") as backend:
        summary = export(archive, Archive(backend))
    # The corrupt piece is noticed as it is read, before anything is copied.
    assert summary.failed == summary.corrupt == 4 and summary.copied == 0
    assert "is corrupt" in summary.failures[0] and "'a.pdf'" in summary.failures[0]


def test_export_carries_the_holds_and_the_sync_records(archive: Archive, tmp_path: Path) -> None:
    """On the copy, retention keeps a held instance as it does on the source; a hold ahead
    of its data, the dead letters, snapshots gone and the catch-up point travel too, and
    rows the target already has are kept."""
    _fill(archive)
    now = dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC)
    archive.holds.place(ORIGIN, "case 4711", "mia", now)
    archive.holds.place(ORIGIN, "case 4712", "ann", now)  # two cases: both travel
    archive.holds.place(AHEAD, "court order", "tom", now, ahead=True)
    records = archive.sync_records
    dead = FailedEvent("e1", "snapshot.add", f"{ORIGIN}-1", "dead", 5, 0, 1, 2, "HTTP 500")
    records.failures.save(dead)
    records.gone.record(f"{ORIGIN}-2", "e2", "snapshot.add", "p1")
    records.progress.advance(1_700_000_000_000, "p1")
    records.progress.skip(10, 20, "p1", "17 snapshots at one time")
    records.claims.take([("e3", "snapshot.add", "ref")], "p1")
    with SQLiteBackend(tmp_path / "target") as backend:
        target = Archive(backend)
        target.sync_records.gone.record("kept", "e9", "snapshot.add", "p9")
        summary = export(archive, target)
        assert (summary.copied, summary.holds, summary.sync_records) == (4, 3, 4)
        assert target.holds.list() == archive.holds.list()
        assert target.sync_records.failures.dead_letters() == [dead]
        assert {g.ref for g in target.sync_records.gone.all()} == {f"{ORIGIN}-2", "kept"}
        point = target.sync_records.progress.point()
        assert point is not None and point.point == 1_700_000_000_000
        assert [s.note for s in target.sync_records.progress.skipped()] == [
            "17 snapshots at one time"
        ]
        assert list(target.sync_records.claims.all()) == []
        report = run_retention(target, Policy.parse("*=1d"), now=dt.datetime.now(dt.UTC))
        assert report.held == [ORIGIN] and report.snapshots_deleted == 0
        assert len(target.list_instance(ORIGIN)) == 4
        again = export(archive, target)
        assert (again.present, again.holds, again.sync_records) == (4, 0, 0)


@pytest.mark.parametrize("cuts", [("java", "content"), ("content", "java")])
def test_export_between_stores_of_other_cuts(tmp_path: Path, cuts: tuple[str, str]) -> None:
    """A Cassandra keyspace (Java's cuts) copied to the embedded store (content-defined
    ones), and back: the files arrive with the content digest they left with."""
    content = random.Random(5).randbytes(2_300_000)
    with (
        SQLiteBackend(tmp_path / "source") as source_store,
        SQLiteBackend(tmp_path / "target") as target_store,
        Archive(source_store, file_cuts=cuts[0]) as source,
        Archive(target_store, file_cuts=cuts[1]) as target,
    ):
        sid = source.store(make_snapshot(0, files={"a.pdf": content})).snapshot_id
        summary = export(source, target)
        assert (summary.copied, summary.failed) == (1, 0), summary.failures
        ((key, digest),) = source.file_digests(sid).values()
        assert target.file_digests(sid) == {"a.pdf": (key, digest)}
        assert source.files.digest(key) != target.files.digest(key)  # other pieces
        assert target.load(sid) == source.load(sid)
