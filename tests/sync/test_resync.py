"""Resync: the syncpoint walk against the double over loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from imixs_archive.archive.service_state import load_state
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.document.model import Document
from imixs_archive.services.jobs import Job
from imixs_archive.storage.base import Backend
from imixs_archive.sync.jobs import resync_job
from imixs_archive.sync.records import ProgressBook
from imixs_archive.sync.resync import Resync, request_cancel, resync_status, stop_asked
from imixs_archive.workflow import WorkflowClient
from imixs_archive.workflow.auth import BasicAuth
from support.workflow_double import WorkflowDouble

BASE = 1_700_000_000_000


@pytest.fixture
def archive(backend: Backend) -> Iterator[Archive]:
    with Archive(backend) as opened:
        yield opened


@pytest.fixture
def client(double: WorkflowDouble) -> Iterator[WorkflowClient]:
    with WorkflowClient(double.url, read_timeout=2) as running:
        yield running


def _populate(double: WorkflowDouble, count: int) -> list[str]:
    ids = []
    for n in range(count):
        files = {"f.bin": bytes([n]) * 3000} if n % 2 else None
        snapshot = double.save(modified=BASE + n * 1000, files=files, event=False)
        ids.append(str(snapshot.get_first("$uniqueid")))
    return ids


def _resync(archive: Archive, client: WorkflowClient, **kw: int) -> Resync:
    return Resync(archive, client, retry_delay_ms=10, **kw)


def test_walk_archives_what_is_missing_and_saves_the_point(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    ids = _populate(double, 6)
    archive.store(double.snapshots[ids[2]])
    result = _resync(archive, client).run(BASE - 1)
    assert result.status == "done"
    assert (result.walked, result.new) == (6, 5)
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(ids)
    for sid in ids:
        assert archive.load(sid) == double.snapshots[sid]
    state = load_state(archive.backend)
    assert state.get_first("sync.point") == BASE + 5000
    assert state.get_first("sync.count") == 6
    assert state.get_first("sync.size") == result.bytes > 0
    assert state.get_first("resync.status") == "done"
    # Again from the saved point: nothing new, nothing walked.
    again = _resync(archive, client).run()
    assert (again.status, again.walked, again.point) == ("done", 0, BASE + 5000)


def test_a_point_where_nothing_can_be_archived_is_passed(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    """The step's $modified then comes from the workflow's answer, its attachment streamed
    past: the walk goes on and says what failed."""
    good = _populate(double, 1)
    bad = double.save(
        Document({"$uniqueid": "no snapshot id"}),
        modified=BASE + 1000,
        files={"big.bin": b"x" * 200_000},
        event=False,
    )
    later = double.save(modified=BASE + 2000, event=False)
    result = _resync(archive, client).run(BASE - 1)
    assert [f for f in result.failures if "not a snapshot id" in f]
    assert str(bad.get_first("$uniqueid")) not in set(archive.index.iter_snapshot_ids())
    assert set(archive.index.iter_snapshot_ids()) == {good[0], str(later.get_first("$uniqueid"))}
    assert load_state(archive.backend).get_first("sync.point") == BASE + 2000


def test_sixteen_per_timestamp_as_documented(archive: Archive) -> None:
    # The documented feed answers 16 of them; the real workflow answers 500 (the
    # catch-up copes with that: tests/services/test_sync_completeness.py).
    with WorkflowDouble(documented=True) as double, WorkflowClient(double.url) as client:
        _sixteen(double, archive, client)


def _sixteen(double: WorkflowDouble, archive: Archive, client: WorkflowClient) -> None:
    for _ in range(20):
        double.save(modified=BASE, event=False)
    last = double.save(modified=BASE + 1, event=False)
    result = _resync(archive, client).run(0)
    # The Java feed's rule: 16 of the 20 sharing one timestamp, then the next timestamp.
    assert result.walked == 17 and len(list(archive.index.iter_snapshot_ids())) == 17
    assert archive.exists(str(last.get_first("$uniqueid")))
    assert any("at most 16" in w for w in result.warnings)


def test_more_than_sixteen_per_timestamp_are_passed_and_reported(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    """The real feed answers 500 for the point before a crowded timestamp: the walk
    locates it, records the range as skipped and goes on after it."""
    before = _populate(double, 3)
    for _ in range(20):
        double.save(modified=BASE + 5000, event=False)
    after = [
        str(double.save(modified=BASE + 9000 + n, event=False).get_first("$uniqueid"))
        for n in range(2)
    ]
    double.inject("status", path="^/api/snapshot/syncpoint/", status=500, times=2)
    result = _resync(archive, client).run(BASE - 1)
    assert result.status == "done"
    assert set(archive.index.iter_snapshot_ids()) == set(before + after)
    assert result.skipped == [(BASE + 2000 + 1, BASE + 5000)]
    assert any("could not be read" in w for w in result.warnings)
    [skipped] = ProgressBook(archive.backend).skipped()
    assert (skipped.name, skipped.point) == (f"skipped:{BASE + 2001}", BASE + 5000)
    assert double.stats.syncpoint_overflows > 0


def test_the_resync_job_result_lists_the_skipped_ranges(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    """Seen by the web and the CLI through the job, not only as a warning's text."""
    for _ in range(20):
        double.save(modified=BASE + 5000, event=False)
    double.save(modified=BASE + 9000, event=False)
    settings = load_settings({"WORKFLOW_SYNC_RETRYDELAY": "10", "WORKFLOW_SYNC_INTERVAL": "10"})
    job = Job("resync", threading.Lock())
    said = resync_job(archive, client, settings, BASE - 1)(job)
    result = job.snapshot().result
    assert result is not None and result["status"] == "done"
    assert result["skipped"] == [{"from": BASE, "to": BASE + 5000}]
    assert "1 range(s) the feed could not answer" in said


def test_a_passing_500_is_retried_not_skipped(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    ids = _populate(double, 4)
    double.inject("status", path=f"^/api/snapshot/syncpoint/{BASE + 1000}$", status=500, times=1)
    result = _resync(archive, client).run(BASE - 1)
    assert (result.status, result.skipped) == ("done", [])
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(ids)
    assert ProgressBook(archive.backend).skipped() == []


def test_failure_stops_at_the_saved_point_and_a_rerun_resumes(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    ids = _populate(double, 5)
    fault = double.inject("status", path=f"^/api/snapshot/syncpoint/{BASE + 2000}$", status=503)
    failed = _resync(archive, client, max_attempts=2).run(BASE - 1)
    assert failed.status == "failed" and failed.point == BASE + 2000
    assert fault.hits == 2
    assert len(list(archive.index.iter_snapshot_ids())) == 3
    assert resync_status(archive) == "failed"
    double.clear_faults()
    resumed = _resync(archive, client).run()
    assert resumed.status == "done" and resumed.walked == 2
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(ids)
    assert load_state(archive.backend).get_first("sync.count") == 5


def test_refused_credentials_end_the_walk_at_once(archive: Archive) -> None:
    """Wrong credentials are not retried for minutes with backoff (seen against the real
    engine): the walk fails at its first refused step, saying why."""
    with WorkflowDouble(auth="BASIC") as double:
        double.save(modified=BASE, event=False)
        with WorkflowClient(double.url, auth=BasicAuth(double.user, "wrong")) as client:
            failed = Resync(archive, client, retry_delay_ms=60_000, max_attempts=8).run(BASE - 1)
        assert failed.status == "failed" and double.stats.requests == 1
        assert "401" in failed.failures[0] and "check the credentials" in failed.failures[0]


def test_broken_answers_are_retried(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    ids = _populate(double, 4)
    for kind in ("truncate", "malformed", "reset"):
        double.inject(kind, path="^/api/snapshot/syncpoint/", times=1)
    result = _resync(archive, client).run(0)
    assert result.status == "done"
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(ids)


def test_cancel_then_run_again_to_the_end(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    ids = _populate(double, 12)
    double.inject("slow", path="^/api/snapshot/syncpoint/", delay=0.2)
    assert request_cancel(archive) is False  # nothing runs yet
    resync = _resync(archive, client)
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(resync.run(BASE - 1).status))
    thread.start()
    # Cancelled once it has walked some (not after a fixed 0.3 s: a walk that had not
    # started yet on a busy machine was not running, or had walked none); the other 11
    # take 2.2 s, the time the cancel has to land.
    deadline = time.monotonic() + 60
    while not any(archive.index.iter_snapshot_ids()):
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.01)
    assert request_cancel(archive) is True
    thread.join(60)
    assert outcome == ["cancelled"]
    walked = len(list(archive.index.iter_snapshot_ids()))
    assert 0 < walked < 12
    double.clear_faults()
    again = _resync(archive, client).run()
    assert again.status == "done"
    assert sorted(archive.index.iter_snapshot_ids()) == sorted(ids)


def test_stop_event_cancels(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    _populate(double, 3)
    resync = _resync(archive, client)
    resync.stopping.set()
    assert resync.run(0).status == "cancelled"
    assert archive.sync_records.progress.resync_stop_asked() is False


def test_a_stop_asked_survives_the_walks_save_of_the_state(
    double: WorkflowDouble, archive: Archive, client: WorkflowClient
) -> None:
    """The walk saves the state document by reading and writing it whole: a stop asked
    between its read and its write must not be lost (it was, once, on a slow node)."""
    _populate(double, 3)
    state = archive.state.load()
    state["resync.status"] = "running"
    archive.state.save(state)
    stale = archive.state.load()  # the walk has read the state ...
    assert request_cancel(archive, "operator") is True  # ... a stop is asked ...
    archive.state.save(stale)  # ... and the walk writes what it read
    assert stop_asked(archive) is True
    resync = _resync(archive, client)
    assert resync._cancel_requested() is True
    # A new walk does not inherit a stop asked of an earlier one, and ends with none left.
    assert resync.run(BASE - 1).status == "done"
    assert archive.sync_records.progress.resync_stop_asked() is False
    assert stop_asked(archive) is False
