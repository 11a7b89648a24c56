"""Backup to the Java backup layout, incremental; import of such trees gives the same."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshot_xml import unseal
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.conventions import modified_day
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.recovery.backup import MANIFEST, DayRange, backup
from imixs_archive.services.importer import import_sources
from imixs_archive.services.sources import find_sources
from imixs_archive.services.workers import Spread
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import CET, ORIGIN, content_of, make_snapshot

PDF = random.Random(8).randbytes(700_000)
OTHER = "11111111-2222-4333-8444-555555555555"


def _fill(archive: Archive) -> None:
    for step in range(3):
        archive.store(make_snapshot(step, files={"a.pdf": PDF}))
    archive.store(make_snapshot(0, origin=OTHER, files={"b.bin": PDF[:1000]}))


def test_backup_writes_the_newest_snapshot_per_instance(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    summary = backup(archive, tmp_path / "bk")
    assert (summary.written, summary.current, summary.failed) == (2, 0, 0)
    created = make_snapshot(0)["$created"][0]
    path = tmp_path / "bk" / f"{created.year:04d}" / f"{created.month:02d}" / f"{ORIGIN}.xml"
    [doc] = read_xml(path.read_bytes())
    assert doc == make_snapshot(2, files={"a.pdf": PDF})
    assert hashlib.sha256(content_of(doc, "a.pdf")).digest() == hashlib.sha256(PDF).digest()


def test_backup_is_incremental(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    backup(archive, tmp_path / "bk")
    again = backup(archive, tmp_path / "bk")
    assert (again.written, again.current) == (0, 2)
    archive.store(make_snapshot(3, files={"a.pdf": PDF}))
    third = backup(archive, tmp_path / "bk")
    assert (third.written, third.current) == (1, 1)


def test_backup_recognises_a_tree_it_did_not_write(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    backup(archive, tmp_path / "bk")
    (tmp_path / "bk" / MANIFEST).unlink()  # as a tree of the Java backup service
    assert backup(archive, tmp_path / "bk").current == 2


def test_all_snapshots_and_date_range(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    assert backup(archive, tmp_path / "all", all_snapshots=True).written == 4
    day = make_snapshot(0)["$modified"][0].astimezone(dt.UTC).date()
    later = DayRange(day + dt.timedelta(days=1))
    assert backup(archive, tmp_path / "none", days=later).written == 0
    assert backup(archive, tmp_path / "range", days=DayRange(day, day)).written == 2


def test_backup_then_import_into_an_empty_store(archive: Archive, tmp_path: Path) -> None:
    _fill(archive)
    backup(archive, tmp_path / "bk", all_snapshots=True)
    with SQLiteBackend(tmp_path / "fresh") as fresh_backend:
        fresh = Archive(fresh_backend)
        summary = import_sources(fresh, find_sources([str(tmp_path / "bk")]))
        assert (summary.new, summary.failed) == (4, 0)
        for snapshot_id in archive.index.iter_snapshot_ids():
            assert fresh.load(snapshot_id) == archive.load(snapshot_id)


def test_import_of_a_java_backup_tree(tmp_path: Path) -> None:
    """The Java backup service writes <data><document> per instance, files included."""
    tree = tmp_path / "java" / "2023" / "11"
    tree.mkdir(parents=True)
    docs = []
    for number in range(3):
        doc = make_snapshot(
            number,
            origin=f"{number:08x}-aaaa-4bbb-8ccc-dddddddddddd",
            files={"scan.pdf": PDF[number:]},
            dollar_backuprestore=True,
            modified=dt.datetime(2023, 11, 14, 10, number, tzinfo=CET),
        )
        docs.append(doc)
        (tree / f"{number:08x}-aaaa-4bbb-8ccc-dddddddddddd.xml").write_bytes(to_xml([doc]))
    with SQLiteBackend(tmp_path / "store") as backend:
        archive = Archive(backend)
        summary = import_sources(archive, find_sources([str(tmp_path / "java")]))
        assert (summary.new, summary.failed) == (3, 0)
        for doc in docs:
            assert archive.load(doc["$uniqueid"][0]) == doc


def test_backup_never_writes_outside_its_folder(archive: Archive, tmp_path: Path) -> None:
    """Java's legacy id pattern admits ``/`` and ``..`` (this archive refuses such ids at
    store, but a keyspace the Java service wrote may hold one): it fails alone, named."""
    evil_doc = make_snapshot(0, origin="aaaaaaaa-/../../../../../PWNED")
    evil = evil_doc["$uniqueid"][0]
    backend = archive.backend
    backend.put(SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": evil.rsplit("-", 1)[0], "snapshot": evil}])
    backend.put(SNAPSHOTS_BY_MODIFIED, [{"modified": modified_day(evil_doc), "snapshot": evil}])
    backend.put(SNAPSHOTS, [{"snapshot": evil, "data": to_xml(evil_doc)}])  # as Java writes
    archive.store(make_snapshot(1))
    root = tmp_path / "out" / "a" / "b" / "bk"
    for all_snapshots in (True, False):
        summary = backup(archive, root, all_snapshots=all_snapshots)
        assert summary.written == 1
        assert summary.failed <= 1 and all("PWNED" in f for f in summary.failures)
    out = tmp_path / "out"
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert not [p for p in written if "PWNED" in p]
    assert all(p.startswith("a/b/bk/") for p in written)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and path.name != MANIFEST
    }


def _manifest(root: Path) -> set[str]:
    return set((root / MANIFEST).read_text(encoding="utf-8").splitlines())


def test_backup_in_worker_processes_writes_what_one_process_writes(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    for origin in range(6):
        for step in range(3):
            name = f"{origin:08d}-2222-4333-8444-555555555555"
            archive.store(make_snapshot(step, origin=name, files={"a.pdf": PDF[: 9000 * step]}))
    for all_snapshots in (False, True):
        here, spread = tmp_path / f"here-{all_snapshots}", tmp_path / f"spread-{all_snapshots}"
        alone = backup(archive, here, all_snapshots=all_snapshots)
        seen: list[str] = []
        workers = backup(
            archive,
            spread,
            all_snapshots=all_snapshots,
            on_snapshot=seen.append,
            spread=Spread(store_settings, 2),
        )
        assert (workers.written, workers.current, workers.failed) == (alone.written, 0, 0)
        assert workers.written == (18 if all_snapshots else 6)
        assert workers.bytes_written == alone.bytes_written
        assert sorted(seen) == sorted(set(seen)) and len(seen) == workers.written
        assert _tree(spread) == _tree(here)
        assert _manifest(spread) == _manifest(here)
        again = backup(
            archive, spread, all_snapshots=all_snapshots, spread=Spread(store_settings, 2)
        )
        assert (again.written, again.current) == (0, workers.written)


def test_backup_in_worker_processes_reports_corrupt_pieces(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    _fill(archive)
    row = next(archive.backend.scan(DOCUMENTS_DATA))
    archive.backend.put(
        DOCUMENTS_DATA, [{"data_id": row["data_id"], "data": b"X" + row["data"][1:]}]
    )
    summary = backup(archive, tmp_path / "bk", spread=Spread(store_settings, 2))
    assert summary.failed == summary.corrupt == 1 and summary.written == 1
    assert "is corrupt" in summary.failures[0]
    assert len(_manifest(tmp_path / "bk")) == 1


def test_backup_of_a_snapshot_stored_in_another_shape(archive: Archive, tmp_path: Path) -> None:
    # The Java service's writer declares namespaces its own way: the stored XML is then
    # read whole and written again, not passed through.
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    snapshot_id = str(make_snapshot(0).get_first("$uniqueid"))
    row = archive.backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    assert row is not None
    xml = unseal(snapshot_id, row["data"]).xml  # a row as the Java service writes it
    other = xml.replace(b"<document ", b"<document xmlns:j='urn:java' ", 1)
    archive.backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": other}])
    assert backup(archive, tmp_path / "bk").written == 1
    [written] = (tmp_path / "bk").rglob("*.xml")
    assert written.read_bytes() == to_xml(make_snapshot(0, files={"a.pdf": PDF}))


class _DeletedWhileRead(DelegatingBackend):
    """Another process deletes ``victim`` right before this one reads its row the second
    time: after the walk found it there, before the backup reads it."""

    def __init__(self, inner: Backend, victim: str) -> None:
        super().__init__(inner)
        self.victim = victim
        self.reads = 0
        self.deleted = False

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        if table is SNAPSHOTS and key.get("snapshot") == self.victim:
            self.reads += 1
        if self.reads == 2 and not self.deleted:
            self.deleted = True
            with Archive(self.inner) as other:
                other.delete(self.victim)
        return super().get(table, key, columns)


def test_a_snapshot_deleted_while_the_backup_runs_is_not_a_failure(
    archive: Archive, tmp_path: Path
) -> None:
    """A snapshot deleted meanwhile (retention, a delete) is not in the archive any more:
    a backup of everything as of its end does not hold it, and that is no failure (the
    torture met exit 1 for it: a backup of every snapshot beside retention)."""
    _fill(archive)
    victim = str(make_snapshot(1)["$uniqueid"][0])
    racing = _DeletedWhileRead(archive.backend, victim)
    with Archive(racing) as other_process:
        summary = backup(other_process, tmp_path / "all", all_snapshots=True)
    assert racing.deleted
    assert (summary.written, summary.failed, summary.failures) == (3, 0, [])
