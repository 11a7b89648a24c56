"""Nothing lost against the workflow's real event log (issue 13), in process over loopback:
a Java archive beside releasing and consuming events, lost events, snapshots the workflow
deleted (404), ``snapshot.remove`` with and without ``WORKFLOW_SYNC_REMOVE``, the catch-up
over ``/snapshot/syncpoint`` and its 16-per-timestamp 500. The real processes (SIGKILL,
several at once) are in ``test_sync_cli.py``."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.document.model import Document
from imixs_archive.ledger.entries import DELETED, ELSEWHERE, Entry
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.verify import verify_ledger
from imixs_archive.sync.records import ClaimBook, FailureBook, GoneBook, ProgressBook
from imixs_archive.sync.service import Outcome, SyncService
from imixs_archive.sync.status import sync_status
from support.java_rows import java_delete_snapshot, java_store_snapshot
from support.snapshots import make_snapshot
from support.sync_harness import FAST, assert_archived, open_service
from support.workflow_double import JavaArchiveBeside, WorkflowDouble

CONFIG = replace(
    FAST,
    deadlock_ms=300,
    max_attempts=100,
    batch=50,
    catchup=True,
    catchup_lag_ms=0,
    catchup_from=0,
)
SEED = 13


def _service(double: WorkflowDouble, archive: Archive, **changes: object) -> SyncService:
    instance = str(changes.pop("instance", "test"))
    return open_service(
        double, archive, config=CONFIG, read_timeout=2.0, instance=instance, **changes
    )


def _populate(double: WorkflowDouble, count: int, seed: int = 1) -> list[Document]:
    return double.save_cases(count, shared=40_000, own=20_000, seed=seed)


def _settled(service: SyncService, double: WorkflowDouble) -> bool:
    return not double.events() and not list(service.claims.all())


def _until_complete(
    services: list[SyncService], double: WorkflowDouble, archive: Archive, limit: float = 60
) -> None:
    """Rounds of every service (in threads) until the log is empty, no claim is left and
    every snapshot the workflow holds is archived."""
    deadline = time.monotonic() + limit

    def complete() -> bool:
        held = set(double.snapshots)
        return _settled(services[0], double) and held <= set(archive.index.iter_snapshot_ids())

    def loop(service: SyncService) -> None:
        while not complete() and time.monotonic() < deadline:
            service.run_round()

    threads = [threading.Thread(target=loop, args=(s,)) for s in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert complete(), (len(double.events()), len(list(services[0].claims.all())))


def test_release_by_a_java_archive_beside_loses_nothing(
    double: WorkflowDouble, archive: Archive
) -> None:
    _populate(double, 60)
    # A Java archive was killed holding ten events locked: its next release deletes them
    # (whatever their age); their snapshots come through the catch-up.
    for entry in double.events()[:10]:
        entry.topic += ".lock"
    double.inject("slow", probability=0.3, delay=0.05)
    services = [_service(double, archive, instance=f"p{n}") for n in range(2)]
    with JavaArchiveBeside(double, interval=0.05) as java:
        _until_complete(services, double, archive)
    assert java.rounds > 0 and double.stats.released == 10
    assert double.stats.locks == 0  # this archive never locks: nothing of its own to delete
    assert_archived(archive, double, only=False)
    assert sum(s.counters.dead_letters for s in services) == 0
    assert sum(s.counters.caught_up for s in services) >= 10


def test_a_java_archive_consuming_events_beside_the_catch_up_gets_them(
    double: WorkflowDouble, archive: Archive
) -> None:
    service = _service(double, archive)
    with JavaArchiveBeside(double, interval=0.02, consume=True, batch=5) as java:
        _populate(double, 40, seed=2)
        deadline = time.monotonic() + 60
        while len(java.taken) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        _until_complete([service], double, archive)
    assert len(java.taken) >= 10, "the Java archive took some events itself"
    assert_archived(archive, double, only=False)
    assert service.counters.caught_up >= 10


@pytest.mark.parametrize("rate", [0.1, 0.2])
def test_failing_calls_and_release_beside_lose_nothing(
    double: WorkflowDouble, archive: Archive, rate: float
) -> None:
    _populate(double, 50, seed=3)
    for path in ("^/api/documents/", "^/api/eventlog/", "^/api/snapshot/syncpoint/"):
        double.inject("status", path=path, probability=rate)
    double.inject("reset", probability=rate / 2)
    services = [_service(double, archive, instance=f"p{n}") for n in range(3)]
    with JavaArchiveBeside(double, interval=0.1, consume=True):
        _until_complete(services, double, archive, limit=90)
    assert_archived(archive, double, only=False)
    assert sum(s.counters.dead_letters for s in services) == 0
    assert sum(s.counters.failures for s in services) > 0


def test_a_claim_left_by_a_killed_process_is_finished(
    double: WorkflowDouble, archive: Archive
) -> None:
    # The state a SIGKILL leaves after the lock: a claim, a locked event; then the
    # release of any process deletes the event.
    snapshot = double.save(files={"a.bin": b"x" * 3000})
    sid = str(snapshot.get_first("$uniqueid"))
    [event] = double.events()
    ClaimBook(archive.backend).take([(event.id, "snapshot.add", sid)], "dead-host-1")
    double.log[event.id].topic = "snapshot.add.lock"
    assert double.release(["snapshot.add"]) == 1 and double.events() == []
    # not stale yet (younger than the deadlock time): its holder may live. A minute, not
    # FAST's 0.3 s: the claim's age here is what the machine gives the lines above (more
    # than 0.3 s once, with the other test worker busy)
    patient = _service(double, archive, catchup=False, deadlock_ms=60_000, instance="patient")
    assert patient.run_round().taken_over == 0
    service = _service(double, archive, catchup=False)
    time.sleep(0.35)  # older than FAST's deadlock time, whatever the load
    result = service.run_round()
    assert result.taken_over == 1 and result.count(Outcome.DONE) == 1
    assert archive.load(sid) == snapshot and list(service.claims.all()) == []


def test_a_snapshot_the_workflow_deleted_is_gone_for_good(
    double: WorkflowDouble, archive: Archive
) -> None:
    kept = double.save()
    vanished = double.save()
    vid = str(vanished.get_first("$uniqueid"))
    double.snapshots.pop(vid)  # SNAPSHOT_HISTORY=1: an intermediate snapshot deleted
    double._xml.pop(vid)
    service = _service(double, archive, catchup=False, max_attempts=3)
    result = service.run_round()
    assert result.count(Outcome.GONE) == 1 and result.count(Outcome.DONE) == 1
    assert double.events() == [] and list(service.claims.all()) == []
    assert list(FailureBook(archive.backend).all()) == []  # no retry, no dead letter
    [gone] = GoneBook(archive.backend).all()
    assert gone.ref == vid
    assert service.counters.gone == 1 and service.counters.failures == 0
    status = sync_status(archive)
    assert status.gone_count == 1 and status.gone[0].ref == vid
    assert archive.exists(str(kept.get_first("$uniqueid"))) and not archive.exists(vid)
    # Nothing comes back for it.
    requests = double.stats.documents
    assert service.run_round().read == 0 and double.stats.documents == requests


def test_remove_events_keep_the_snapshot_unless_the_setting_is_on(
    double: WorkflowDouble, archive: Archive, caplog: pytest.LogCaptureFixture
) -> None:
    snapshot = double.save(files={"b.bin": b"b" * 7000})
    sid = str(snapshot.get_first("$uniqueid"))
    service = _service(double, archive, catchup=False)
    service.run_round()
    double.remove_snapshot(sid)
    with caplog.at_level(logging.INFO, logger="imixs_archive.sync"):
        assert service.run_round().count(Outcome.DONE) == 1
    assert double.events() == [] and archive.exists(sid)
    assert any("WORKFLOW_SYNC_REMOVE" in r.getMessage() for r in caplog.records)
    assert service.counters.removed == 0
    double.put_event("snapshot.remove", sid)
    on = _service(double, archive, catchup=False, remove=True)
    assert on.run_round().count(Outcome.DONE) == 1
    assert not archive.exists(sid) and on.counters.removed == 1


def test_catch_up_archives_snapshots_no_event_announced(
    double: WorkflowDouble, archive: Archive
) -> None:
    base = 1_700_000_000_000
    snapshots = [double.save(modified=base + n * 10, event=False) for n in range(30)]
    # all 30 in the one round: its catch-up budget a minute, not the default second (on
    # Cassandra beside the cluster tests 27 came through in that second)
    service = _service(double, archive, catchup_budget_ms=60_000)
    result = service.run_round()
    assert result.read == 0
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(double.snapshots)
    assert_archived(archive, double, only=False)
    assert service.counters.caught_up == 30
    progress = ProgressBook(archive.backend).point()
    assert progress is not None and progress.point == base + 290
    # Idle: one request per round, nothing walked again.
    before = double.stats.syncpoints
    service.run_round()
    assert double.stats.syncpoints == before + 1
    assert snapshots


def test_catch_up_leaves_a_snapshot_the_event_path_is_archiving_to_it(
    double: WorkflowDouble, archive: Archive
) -> None:
    # A snapshot a worker is downloading is not downloaded a second time by the walk
    # (after an outage both walk the same backlog); the point waits for it.
    base = 1_700_000_000_000
    first, busy, last = (double.save(modified=base + n, event=False) for n in range(3))
    ids = [str(doc.get_first("$uniqueid")) for doc in (first, busy, last)]
    service = _service(double, archive)
    assert service._in_flight.take([ids[1]])
    service.run_round()
    assert set(archive.index.iter_snapshot_ids()) == {ids[0]}
    progress = ProgressBook(archive.backend).point()
    assert progress is not None and progress.point == base  # not past the busy one
    service._in_flight.release([ids[1]])  # its worker is done (here: failed), the walk goes on
    service.run_round()
    assert set(archive.index.iter_snapshot_ids()) == set(ids)
    assert_archived(archive, double, only=False)


def test_the_event_path_leaves_a_snapshot_the_catch_up_is_archiving_to_it(
    double: WorkflowDouble, archive: Archive
) -> None:
    snapshot = double.save()
    ref = str(snapshot.get_first("$uniqueid"))
    service = _service(double, archive, catchup=False)
    assert service._in_flight.take([ref])  # the walk is downloading it
    result = service.run_round()
    assert result.count(Outcome.SKIPPED) == 1
    assert not archive.exists(ref) and len(double.events()) == 1  # the event waits
    service._in_flight.release([ref])
    result = service.run_round()
    assert result.count(Outcome.DONE) == 1 and double.events() == []
    assert_archived(archive, double, only=False)


def test_catch_up_stays_behind_by_the_lag(double: WorkflowDouble, archive: Archive) -> None:
    service = _service(double, archive, catchup_lag_ms=60_000)
    old = double.save(modified=int(time.time() * 1000) - 120_000, event=False)
    fresh = double.save(event=False)
    service.run_round()
    progress = ProgressBook(archive.backend).point()
    old_ms = int(old.get_first("$modified").timestamp() * 1000)
    assert progress is not None and progress.point == old_ms  # not past the fresh one
    assert archive.exists(str(old.get_first("$uniqueid")))
    assert not archive.exists(str(fresh.get_first("$uniqueid")))  # left to its event


def test_catch_up_passes_a_timestamp_shared_by_more_than_sixteen(
    double: WorkflowDouble, archive: Archive
) -> None:
    base = 1_700_000_000_000
    before = [double.save(modified=base - 1000 + n, event=False) for n in range(3)]
    crowd = [double.save(modified=base) for _ in range(20)]  # 500 from the feed
    after = [double.save(modified=base + 777 + n, event=False) for n in range(3)]
    double.inject("status", path="^/api/snapshot/syncpoint/", probability=0.2)
    service = _service(double, archive, catchup_budget_ms=20_000)
    deadline = time.monotonic() + 60
    while (double.events() or not archive.exists(str(after[-1].get_first("$uniqueid")))) and (
        time.monotonic() < deadline
    ):
        service.run_round()
    assert_archived(archive, double, only=False)  # the crowd came by its events
    [skipped] = ProgressBook(archive.backend).skipped()
    assert (int(skipped.name.split(":")[1]), skipped.point) == (base - 1000 + 2 + 1, base)
    assert double.stats.syncpoint_overflows > 0
    assert sync_status(archive).catchup_skipped[0]["to"] == base
    assert before and crowd


def test_catch_up_does_not_skip_when_every_point_fails(
    double: WorkflowDouble, archive: Archive
) -> None:
    double.save(modified=1_700_000_000_000, event=False)
    double.inject("status", path="^/api/snapshot/syncpoint/")
    service = _service(double, archive)
    result = service.run_round()
    assert result.pause.startswith("catch-up")
    assert ProgressBook(archive.backend).skipped() == []
    assert ProgressBook(archive.backend).point() is not None
    assert ProgressBook(archive.backend).point().point == 0  # type: ignore[union-attr]


def test_the_quick_scan_reads_what_the_full_reader_reads(double: WorkflowDouble) -> None:
    from imixs_archive.document.xml_reader import read_xml
    from imixs_archive.document.xml_writer import to_xml
    from imixs_archive.sync.catchup import _scan

    snapshots = [double.save(files={"a.bin": b"x" * 100}, note="<$uniqueid>") for _ in range(3)]
    body = to_xml(snapshots, collection=True)
    expected = [
        (str(d.get_first("$uniqueid")), int(d.get_first("$modified").timestamp() * 1000))
        for d in read_xml(body)
    ]
    assert _scan([body[:100], body[100:]]) == expected
    # What it does not know (a bare <document>, a value that is no date) it leaves to
    # the full reader.
    assert _scan([to_xml(snapshots[0])]) is None
    odd = snapshots[0].copy()
    odd["$modified"] = "yesterday"
    assert _scan([to_xml([odd], collection=True)]) is None


def test_an_unexpected_error_pauses_the_catch_up_thread_it_does_not_end_it(
    double: WorkflowDouble, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve``'s catch-up runs in a thread of its own: an error nobody expected (a bug;
    against the engine a ``$file`` without a value raised an IndexError) is logged and the
    walk pauses, then goes on; the thread ended there before, and the catch-up with it."""
    service = _service(double, archive, catchup_budget_ms=60_000)
    walk, raised = service.catchup.run, []

    def failing_once(budget: float) -> object:
        if not raised:
            raised.append(True)
            raise IndexError("list index out of range")
        return walk(budget)

    monkeypatch.setattr(service.catchup, "run", failing_once)
    double.save(modified=1_700_000_000_000, event=False)
    thread = threading.Thread(target=service.run, kwargs={"initial_delay": False})
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while set(double.snapshots) - set(archive.index.iter_snapshot_ids()):
            assert time.monotonic() < deadline, "the catch-up never came back"
            time.sleep(0.05)
    finally:
        service.stop()
        thread.join(30)
    assert raised and not thread.is_alive()
    assert_archived(archive, double, only=False)


def _java_day_listing(archive: Archive) -> list[str]:
    """The ids a listing over two years gives (over 62 days: the day index)."""
    first, last = dt.date(2023, 1, 1), dt.date(2024, 12, 31)
    return [sid for _day, sid in archive.days.iter_local_days(first, last, dt.UTC)]


def _a_day_only_java_stored(double: WorkflowDouble, archive: Archive, *, event: bool) -> str:
    """One snapshot of ours (the day index is built), then one the workflow holds and the
    Java service archived, rows as its ``DataService`` writes them, on a day of its own."""
    archive.store(make_snapshot(1, modified=dt.datetime(2023, 5, 1, 9, tzinfo=dt.UTC)))
    assert len(_java_day_listing(archive)) == 1
    doc = double.save(modified=dt.datetime(2024, 3, 1, 9, tzinfo=dt.UTC), event=event)
    java_id = java_store_snapshot(archive.backend, doc)
    assert java_id not in _java_day_listing(archive)  # the gap (java-audit-3 N8)
    return java_id


@pytest.mark.both_stores
def test_the_catch_up_files_the_day_of_a_snapshot_only_java_stored(
    double: WorkflowDouble, archive: Archive
) -> None:
    java_id = _a_day_only_java_stored(double, archive, event=False)
    service = _service(double, archive, catchup_budget_ms=60_000)
    service.run_round()
    assert service.counters.caught_up == 0  # nothing downloaded: Java has it
    assert java_id in _java_day_listing(archive)


@pytest.mark.both_stores
def test_the_event_of_a_snapshot_java_stored_files_its_day(
    double: WorkflowDouble, archive: Archive
) -> None:
    if not archive.storage.java_may_write:
        pytest.skip("the Java service cannot write an SQLite store")
    java_id = _a_day_only_java_stored(double, archive, event=True)
    service = _service(double, archive, catchup=False)
    assert service.run_round().count(Outcome.DONE) == 1
    assert java_id in _java_day_listing(archive)


@pytest.mark.both_stores
def test_the_sync_logs_a_snapshot_the_java_history_cleanup_deleted(
    double: WorkflowDouble, archive: Archive, tmp_path: Path
) -> None:
    """Java saves an instance's next snapshot and its history cleanup deletes the one
    before (java-audit-3 X3); the sync, meeting the new one, logs the old one as deleted
    ``elsewhere`` (``ARCHIVE_JAVA_WRITES``), so ``ledger verify`` finds nothing wrong."""
    beside = Archive(archive.backend, java_writes=True)
    if not beside.storage.java_may_write:
        pytest.skip("the Java service cannot write an SQLite store")
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "keys")})
    service = _service(double, beside, catchup=False)
    first = double.save(subject="one")
    assert service.run_round().count(Outcome.DONE) == 1
    with Sequencer(beside, settings) as sequencer:
        sequencer.drain()
    uid = str(first.get_first("$uniqueid")).rsplit("-", 1)[0]
    second = double.save(double.workitems[uid], subject="two")
    java_store_snapshot(beside.backend, second)  # Java first: its save, then its cleanup
    java_delete_snapshot(beside.backend, beside, str(first.get_first("$uniqueid")))
    assert service.run_round().count(Outcome.DONE) == 1
    with Sequencer(beside, settings) as sequencer:
        sequencer.drain()
    last = {e.target: e for e in map(Entry.decode, (r.text for r in beside.ledger.entries(0)))}
    gone = last[str(first.get_first("$uniqueid"))]
    assert (gone.kind, gone.reason) == (DELETED, ELSEWHERE)
    report = verify_ledger(beside, settings)
    assert report.ok and report.removed == [] and report.removed_elsewhere == []
