"""The consumer of snapshot.backup events (``recovery/backup_events.py``) against a real FTPS
server on loopback and the workflow test double over real HTTP: every event ends one
counted way, none stays for ever (issue 31, item 2; java-beside.md N2)."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from imixs_archive.cli import main
from imixs_archive.document.model import Document
from imixs_archive.recovery import backup_events
from imixs_archive.recovery.backup_events import BackupEvents
from imixs_archive.recovery.ftps import FtpsTarget
from imixs_archive.recovery.full_backup import queue_full_backup
from imixs_archive.workflow.client import WorkflowClient
from support.backup_rig import BackupRig, backed_up
from support.ftps_server import FtpsServer
from support.restore_data import file_hashes
from support.workflow_double import WorkflowDouble

TOPIC = "snapshot.backup"
DAY = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


class Clock:
    """The consumer's monotonic clock, moved by the test: how long an event was locked or
    waits for its retry is then what the test says, not what a loaded machine made of
    the time between two rounds (a round slower than the 200 ms retry delay retried too
    soon)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def move(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(backup_events, "time", moved)
    return moved


@pytest.fixture
def backup_only(
    monkeypatch: pytest.MonkeyPatch,
    ftps: FtpsServer,
    double: WorkflowDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., str]:
    """Runs ``backup-events`` with these arguments in a backup-only setup (the FTPS
    target): it succeeds and makes no store; what it printed."""
    for name, value in {
        "BACKUP_ONLY": "true",
        **ftps.env(),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
    }.items():
        monkeypatch.setenv(name, value)

    def run(*args: str) -> str:
        store = tmp_path / "store"
        assert main(["backup-events", *args, "--data-dir", str(store)]) == 0
        assert not store.exists()
        return capsys.readouterr().out

    return run


def only_in_the_workflow(double: WorkflowDouble, number: int = 0) -> Document:
    """A snapshot the workflow holds and the archive does not (saved without an event)."""
    uid = f"{number:08x}-aaaa-4222-8333-444444444444"
    item = {"$uniqueid": uid, "subject": f"only in the workflow {number}"}
    return double.save(Document(item), files={"scan.pdf": b"%PDF" * 5000}, event=False)


def test_the_stall_replayed(rig: BackupRig) -> None:
    """N2's replay: a batch of events whose snapshots neither the archive nor the workflow
    holds filled the read window, and the sixth, valid event was never reached."""
    (uid, valid), *_ = rig.archived(instances=1).items()
    for number in range(5):
        rig.double.put_event(TOPIC, f"{number:08x}-dead-4222-8333-444444444444-1700000000000")
    rig.double.put_event(TOPIC, valid)
    events = rig.events(batch=5)
    first = events.run_round()
    assert (first.read, first.gone, first.pending, first.failed) == (5, 5, 0, [])
    second = events.run_round()
    assert (second.read, second.written) == (1, 1)
    assert not rig.double.log  # every event ended: none waits for ever
    assert backed_up(rig.ftps, uid) == rig.archive.load(valid)
    assert events.status.totals["gone"] == 5 and events.status.totals["written"] == 1


def test_a_snapshot_the_archive_lacks_comes_from_the_workflow(
    rig: BackupRig, caplog: pytest.LogCaptureFixture
) -> None:
    """As Java's BackupService.pullSnapshot: GET /documents/{ref}, the same file as the
    archive would have written."""
    snapshot = only_in_the_workflow(rig.double)
    snapshot_id = str(snapshot.get_first("$uniqueid"))
    uid = snapshot_id.rsplit("-", 1)[0]
    rig.double.put_event(TOPIC, snapshot_id)
    caplog.set_level(logging.INFO, logger="imixs_archive.recovery.backup_events")
    events = rig.events()
    done = events.run_round()
    assert (done.read, done.written, done.pulled, done.failed) == (1, 1, 1, [])
    assert not rig.double.log and not rig.archive.exists(snapshot_id)
    backup = backed_up(rig.ftps, uid)
    assert file_hashes(backup) == file_hashes(snapshot)
    rig.archive.store(snapshot.copy())
    assert backup == rig.archive.load(snapshot_id)
    events.run_round()
    events.run_round()  # idle rounds are said once, not every interval
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("backup_events")]
    assert lines == [
        "backup: snapshot.backup: 1 events: 1 written, 0 already current (1 taken from the "
        "workflow), 0 gone from the workflow, 0 given up, 0 failed, 0 dead locks released; "
        "0 left",
        "backup: snapshot.backup: no event waiting",
    ]


def test_backup_only_takes_every_snapshot_from_the_workflow(rig: BackupRig) -> None:
    """No archive beside (BACKUP_ONLY): the workflow's snapshot, never the archive's."""
    newest = rig.archived(instances=2)
    for snapshot_id in newest.values():
        rig.double.put_event(TOPIC, snapshot_id)
    before = rig.double.stats.documents
    done = BackupEvents(None, rig.client, rig.target).run_round()
    assert (done.written, done.pulled, done.failed) == (2, 2, [])
    assert rig.double.stats.documents - before == 2
    rig.assert_backed_up(newest)


def test_dead_locks_are_unlocked_and_backed_up(rig: BackupRig, clock: Clock) -> None:
    """A consumer killed between lock and delete leaves ``snapshot.backup.lock`` (a lock
    sent twice ``.lock.lock``): seen locked for BACKUP_SYNC_DEADLOCK, it is unlocked and
    backed up; never deleted unwritten, as the workflow's release would."""
    double, client = rig.double, rig.client
    newest = rig.archived(instances=2)
    first, second = (double.put_event(TOPIC, sid) for sid in newest.values())
    client.lock_event(first.id)
    client.lock_event(second.id)
    client.lock_event(second.id)
    assert sorted(e.topic for e in double.log.values()) == [f"{TOPIC}.lock", f"{TOPIC}.lock.lock"]
    events = rig.events(deadlock_ms=400)
    young = events.run_round()
    assert (young.read, young.released, len(double.log)) == (0, 0, 2)  # not dead yet
    clock.move(0.3)
    assert events.run_round().released == 0  # still not
    clock.move(0.2)
    dead = events.run_round()
    assert (dead.released, dead.read, dead.written) == (2, 2, 2)
    assert not double.log and double.stats.released == 0
    rig.assert_backed_up(newest)


def test_an_event_that_keeps_failing_is_given_up(rig: BackupRig, clock: Clock) -> None:
    """The workflow answers 500 for one snapshot the archive lacks: retried, then removed
    and counted, while the event behind it is done in the first round."""
    double = rig.double
    broken = str(only_in_the_workflow(double, 1).get_first("$uniqueid"))
    fine = only_in_the_workflow(double, 2)
    double.put_event(TOPIC, broken)
    double.put_event(TOPIC, str(fine.get_first("$uniqueid")))
    double.inject("status", path=rf"^/api/documents/{re.escape(broken)}", status=500)
    events = rig.events(max_attempts=3, retry_delay_ms=200)
    rounds = [events.run_round()]
    waiting = events.run_round()  # the failed one waits its delay, not tried again yet
    assert (waiting.read, waiting.failed, waiting.pending, len(double.log)) == (1, [], 1, 1)
    clock.move(0.25)
    rounds.append(events.run_round())
    clock.move(0.3)  # the delay doubled: not yet
    waiting = events.run_round()
    assert (waiting.read, waiting.failed, waiting.given_up, len(double.log)) == (1, [], 0, 1)
    clock.move(0.15)
    rounds.append(events.run_round())
    assert [len(r.failed) for r in rounds] == [1, 1, 0]
    assert [r.given_up for r in rounds] == [0, 0, 1] and rounds[0].written == 1
    assert "HTTP 500" in rounds[0].failed[0] and not double.log
    assert events.status.totals == {
        "written": 1,
        "current": 0,
        "pulled": 1,
        "gone": 0,
        "given_up": 1,
        "failed": 2,
        "released": 0,
    }
    assert file_hashes(backed_up(rig.ftps, "00000002-aaaa-4222-8333-444444444444")) == file_hashes(
        fine
    )


def test_the_ftps_server_failing_ends_the_round_and_keeps_the_events(rig: BackupRig) -> None:
    """No attempt is counted against an event for the target's failure."""
    double, ftps = rig.double, rig.ftps
    for snapshot_id in rig.archived(instances=2).values():
        double.put_event(TOPIC, snapshot_id)
    ftps.faults.drop_after = 50_000
    events = rig.events(max_attempts=1)
    done = events.run_round()
    assert done.stopped and done.failures == 1 and done.given_up == 0
    assert (len(double.log), done.pending) == (2, 2)
    ftps.faults.drop_after = None
    assert events.run_round().written == 2 and not double.log


def test_backup_events_once_backup_only_opens_no_store(
    double: WorkflowDouble, backup_only: Callable[..., str]
) -> None:
    """``backup-events --once`` with BACKUP_ONLY: from the workflow, no archive made."""
    snapshot_id = str(only_in_the_workflow(double).get_first("$uniqueid"))
    double.put_event(TOPIC, snapshot_id)
    double.put_event(TOPIC, "0badf00d-dead-4222-8333-444444444444-1700000000000")
    out = backup_only("--once")
    assert "2 events: 1 written, 0 already current (1 taken from the workflow), 1 gone" in out
    assert not double.log


def test_credentials_refused_end_the_round_and_give_nothing_up(
    double: WorkflowDouble, client: WorkflowClient, target: FtpsTarget
) -> None:
    """A refusal of the credentials is the setup's, not the snapshot's: no attempt counts,
    the event is unlocked and waits."""
    snapshot_id = str(only_in_the_workflow(double).get_first("$uniqueid"))
    double.put_event(TOPIC, snapshot_id)
    double.inject("status", path=r"^/api/documents/", status=403)
    events = BackupEvents(None, client, target, max_attempts=1)
    done = events.run_round()
    assert done.stopped.startswith("workflow: ") and "HTTP 403" in done.stopped
    assert (done.given_up, done.failures, done.pending) == (0, 1, 1)
    assert [e.topic for e in double.log.values()] == [TOPIC]  # unlocked, waiting
    double.clear_faults()
    assert events.run_round().written == 1 and not double.log


def test_no_overwrite_in_an_event_s_data_is_read(
    double: WorkflowDouble, client: WorkflowClient, target: FtpsTarget, ftps: FtpsServer
) -> None:
    """Java's full backup sets ``NO_OVERWRITE`` in the event's data (issue 45 item 6): a
    file that holds the snapshot is then left as it is, also with BACKUP_FTP_OVERWRITE."""
    snapshot_id = str(only_in_the_workflow(double).get_first("$uniqueid"))
    events = BackupEvents(None, client, target, overwrite=True)
    for data, written in ((None, 1), (None, 1), ({"no_overwrite": [True]}, 0)):
        double.put_event(TOPIC, snapshot_id, data)
        done = events.run_round()
        assert (done.written, done.current, done.failed) == (written, 1 - written, [])
    assert not double.log


def test_a_full_backup_walks_the_workflow_without_an_archive(
    double: WorkflowDouble, client: WorkflowClient, target: FtpsTarget, ftps: FtpsServer
) -> None:
    """Java's FullBackupService (issue 45 item 6): an event of every workitem's newest
    snapshot, NO_OVERWRITE, from the workflow's documents page by page; the backup of
    events writes them from the workflow. Seven documents, pages of two: the last page
    holds one, which Java's walk left out; a document without a snapshot is passed."""
    newest = {}
    for number in range(6):
        item = {"$uniqueid": f"{number:08x}-bbbb-4222-8333-444444444444", "subject": "s"}
        for step in range(2):
            snapshot = double.save(Document({**item, "step": step}), event=False)
        newest[item["$uniqueid"]] = str(snapshot.get_first("$uniqueid"))
    double.workitems["0000000f-cccc-4222-8333-444444444444"] = Document(
        {"$uniqueid": "0000000f-cccc-4222-8333-444444444444", "$created": DAY, "type": "model"}
    )
    walked: list[int] = []
    done = queue_full_backup(client, TOPIC, page_size=2, progress=walked.append)
    assert (done.documents, done.queued, done.pages) == (7, 6, 4)
    assert walked == [2, 2, 2, 1]  # the documents of each page, for the command's counter
    assert sorted(e.ref for e in double.log.values()) == sorted(newest.values())
    assert all(e.data == {"no_overwrite": [True]} for e in double.log.values())
    backed = BackupEvents(None, client, target, overwrite=True).run_round()
    assert (backed.written, backed.pulled, backed.failed) == (6, 6, [])
    for uid, snapshot_id in newest.items():
        assert backed_up(ftps, uid)["$uniqueid"] == [snapshot_id]
    queue_full_backup(client, TOPIC, page_size=2)  # again: nothing written twice
    again = BackupEvents(None, client, target, overwrite=True).run_round()
    assert (again.written, again.current) == (0, 6) and not double.log


def test_backup_events_full_queues_and_backs_up_in_backup_only_mode(
    double: WorkflowDouble, ftps: FtpsServer, backup_only: Callable[..., str]
) -> None:
    snapshot_id = str(only_in_the_workflow(double).get_first("$uniqueid"))
    out = backup_only("--full", "--once")
    assert "1 snapshot.backup events queued (NO_OVERWRITE) for 1 workflow documents" in out
    assert "1 events: 1 written" in out
    assert backed_up(ftps, snapshot_id.rsplit("-", 1)[0])["$uniqueid"] == [snapshot_id]
    assert not double.log
