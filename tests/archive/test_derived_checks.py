"""``verify`` checks every index and derived table against the snapshots they are derived
from (``archive/derived_checks.py``), on every backend: each damage made through the store
(a row deleted, altered, or a stray one added) is a problem naming exactly its table, and
nothing else; an undamaged archive is clean."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.archive.verify_fill import fill

from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.facts import Fact
from imixs_archive.archive.scrub import ScrubReport, scrub_slice, scrub_status
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import modified_day, origin_id
from imixs_archive.filestore.reading import is_hashed
from imixs_archive.services.reconcile import reconcile
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_DAY_CHANGES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    TABLES,
    Table,
)
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.damage import damage_page
from support.snapshots import make_snapshot

DAY = 86_400.0
T0 = 1_790_000_000_000
TWO_FILES = make_snapshot(900, origin="6a0e3a6d-a0e4-4875-89f1-3b418859abe5",
                          files={"a.txt": b"first file", "b.txt": b"second file"})  # fmt: skip


@dataclass(frozen=True)
class Target:
    """A stored snapshot with two files, what its rows are keyed by."""

    snapshot: str
    origin: str
    day: dt.date
    key: str
    piece: str


@pytest.fixture
def target(archive: Archive) -> Target:
    fill(archive, instances=4)
    sid = archive.store(TWO_FILES).snapshot_id
    doc = archive.load_complete(sid)
    assert doc is not None
    key = archive.index.file_keys(sid, doc)["a.txt"]
    rows = archive.backend.scan(DOCUMENTS, {"md5": key})
    piece = next(r["data_id"] for r in rows if is_hashed(r["data_id"]))
    return Target(sid, origin_id(sid), modified_day(doc), key, piece)


def _fact(backend: Backend, t: Target) -> dict[str, object]:
    row = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": t.day, "snapshot": t.snapshot})
    assert row is not None
    return row


def _altered_fact(backend: Backend, t: Target) -> None:
    row = _fact(backend, t)
    fact = Fact.decode(row["data"])  # type: ignore[arg-type]
    changed = [fact.slot, ["Other", *fact.labels[1:]], fact.logical, fact.new_files, 0]
    backend.put(ARCHIVE_SNAPSHOT_FACTS, [{**row, "data": json.dumps(changed).encode()}])


def _later(t: Target, days: int = 5) -> dt.date:
    return t.day + dt.timedelta(days=days)


DAMAGE: dict[str, tuple[str, Callable[[Backend, Target], None]]] = {
    "uniqueid row deleted": (
        SNAPSHOTS_BY_UNIQUEID.name,
        lambda b, t: b.delete(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": t.origin,
                                                      "snapshot": t.snapshot}),
    ),
    "uniqueid row under another instance": (
        SNAPSHOTS_BY_UNIQUEID.name,
        lambda b, t: b.put(SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": "x-y", "snapshot": t.snapshot}]),
    ),
    "modified row deleted": (
        SNAPSHOTS_BY_MODIFIED.name,
        lambda b, t: b.delete(SNAPSHOTS_BY_MODIFIED, {"modified": t.day, "snapshot": t.snapshot}),
    ),
    "modified row under another day": (
        SNAPSHOTS_BY_MODIFIED.name,
        lambda b, t: b.put(SNAPSHOTS_BY_MODIFIED, [{"modified": _later(t),
                                                    "snapshot": t.snapshot}]),
    ),
    "file row deleted": (
        ARCHIVE_SNAPSHOT_FILES.name,
        lambda b, t: b.delete(ARCHIVE_SNAPSHOT_FILES, {"snapshot": t.snapshot, "name": "b.txt"}),
    ),
    "stray file row": (
        ARCHIVE_SNAPSHOT_FILES.name,
        lambda b, t: b.put(ARCHIVE_SNAPSHOT_FILES, [
            {"snapshot": t.snapshot, "name": "c.txt", "md5": t.key, "claimed_md5": ""}
        ]),
    ),
    "document row deleted": (
        SNAPSHOTS_BY_DOCUMENT.name,
        lambda b, t: b.delete(SNAPSHOTS_BY_DOCUMENT, {"md5": t.key, "snapshot": t.snapshot}),
    ),
    "fact altered": (ARCHIVE_SNAPSHOT_FACTS.name, _altered_fact),
    "fact under another day": (
        ARCHIVE_SNAPSHOT_FACTS.name,
        lambda b, t: b.put(ARCHIVE_SNAPSHOT_FACTS, [{**_fact(b, t), "day": _later(t, 3)}]),
    ),
    "fact unreadable": (
        ARCHIVE_SNAPSHOT_FACTS.name,
        lambda b, t: b.put(ARCHIVE_SNAPSHOT_FACTS, [{**_fact(b, t), "data": b"{"}]),
    ),
    "piece reference deleted": (
        ARCHIVE_PIECE_REFS.name,
        lambda b, t: b.delete(ARCHIVE_PIECE_REFS, {"data_id": t.piece, "md5": t.key}),
    ),
    "piece reference altered": (
        ARCHIVE_PIECE_REFS.name,
        lambda b, t: b.put(ARCHIVE_PIECE_REFS, [{"data_id": t.piece, "md5": t.key, "size": 1}]),
    ),
}  # fmt: skip


def test_an_undamaged_archive_is_clean(archive: Archive, target: Target) -> None:
    report = archive.verify_part().report
    assert report.ok, report.problems
    assert report.snapshots == 13 and not report.disagreeing and not report.damaged
    assert not report.factless


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_each_damage_names_exactly_its_table_and_the_reconcile_rebuilds_it(
    archive: Archive, backend: Backend, target: Target, damage: str
) -> None:
    table, make = DAMAGE[damage]
    make(backend, target)
    report = archive.verify_part().report
    assert not report.ok
    assert report.disagreeing == {table: 1}, report.problems
    assert report.problems == [p for p in report.problems if p.startswith(f"{table}: ")]
    assert not report.damaged
    # stats --reconcile rebuilds it (a fact the count before the rebuild found missing or
    # unreadable it counted again)
    assert set(reconcile(archive).rebuilt) <= {table, ARCHIVE_SNAPSHOT_FACTS.name}
    report = archive.verify_part().report
    assert report.ok, report.problems
    assert not report.warnings, report.warnings
    again = reconcile(archive)
    assert not again.rebuilt and not again.facts_changed  # nothing left to rebuild


def test_a_stopped_rebuild_goes_on_where_it_stood(
    archive: Archive, backend: Backend, target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _table, make in DAMAGE.values():
        make(backend, target)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    ticks: list[str] = []

    def stop_in_the_days(walk: str) -> None:
        ticks.append(walk)
        if walk == "days":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reconcile(archive, tick=stop_in_the_days)
    went_on = reconcile(archive, tick=ticks.append)
    assert went_on.resumed_after == "the rebuild of days"
    assert ticks.count("snapshots") == 13  # each snapshot's rows rebuilt once
    report = archive.verify_part().report
    assert report.ok, report.problems


# ---- SQLite: damage in the store's own file ---------------------------------------------

DERIVED = (
    SNAPSHOTS_BY_UNIQUEID,
    SNAPSHOTS_BY_MODIFIED,
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS_BY_DOCUMENT,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_PIECE_REFS,
)


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("filled")
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        fill(archive, instances=6)
        archive.store(TWO_FILES)
    return folder


@pytest.mark.parametrize("table", DERIVED, ids=lambda t: t.name)
def test_a_damaged_page_names_exactly_its_table(
    filled_store: Path, tmp_path: Path, table: Table
) -> None:
    store = tmp_path / "store"
    shutil.copytree(filled_store, store)
    damage_page(store, table.name)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        report = archive.verify_part().report
    assert not report.ok
    assert set(report.damaged) == {table.name}, report.problems
    assert set(report.disagreeing) <= {table.name}, report.problems
    assert all(p.startswith(f"{table.name}: ") for p in report.problems), report.problems


def test_parts_find_what_one_run_finds(archive: Archive, backend: Backend, target: Target) -> None:
    for _table, make in DAMAGE.values():
        make(backend, target)
    whole = archive.verify_part().report
    parts = [archive.verify_part(k, 3).report for k in (1, 2, 3)]
    summed: dict[str, int] = {}
    for report in parts:
        for table, count in report.disagreeing.items():
            summed[table] = summed.get(table, 0) + count
    assert summed == whole.disagreeing and len(summed) == 6
    assert sorted(p for r in parts for p in r.problems) == sorted(whole.problems)


def test_the_scrub_checks_the_file_a_table_at_a_time(filled_store: Path, tmp_path: Path) -> None:
    """A table no walk reads (the day stamps): only the check of the file finds its damage,
    in the slice whose share of the tables covers it."""
    store = tmp_path / "store"
    shutil.copytree(filled_store, store)
    damage_page(store, ARCHIVE_DAY_CHANGES.name)
    index = [t.name for t in TABLES].index(ARCHIVE_DAY_CHANGES.name)
    half_of_the_tables = math.ceil(len(TABLES) / 2)  # the scrub's share, rounded up
    assert index >= half_of_the_tables
    clock = [T0]
    with SQLiteBackend(store) as backend:

        def slice_at(share: float) -> ScrubReport:
            clock[0] = T0 + int(share * DAY * 1000)
            return scrub_slice(
                backend, period=DAY, interval=0, holder="t@h:1:a", now=lambda: clock[0]
            )

        assert not slice_at(0).damaged  # nothing due yet
        half = slice_at(0.5)
        assert CheckBooks(backend).read("scrub")["cursors"]["file"] == half_of_the_tables  # type: ignore[index]
        assert not half.damaged and not half.problem_count
        rest = slice_at(1.0)
        assert rest.cycle_finished and set(rest.damaged) == {ARCHIVE_DAY_CHANGES.name}
        findings = scrub_status(backend, DAY, at=clock[0])["findings"]
        assert findings and all(f["walk"] == "file" for f in findings)
        assert {f["at"] for f in findings} == {ARCHIVE_DAY_CHANGES.name}
