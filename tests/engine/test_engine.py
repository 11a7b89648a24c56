"""The archive against the real Imixs-Workflow engine (``scripts/imixs-workflow``: engine
6.1.0 with imixs-archive-api 3.1.0 on Payara Micro), driven as a business application
drives it: tickets created and moved through the model by several users at once, with
attachments from a few bytes to 50 MB. ``ARCHIVE_TEST_ENGINE`` names the running engine
(``.ci/run`` starts it); without it these tests skip.

One file on purpose: every test shares the engine's single event log, so they must not
run at the same time (``--dist loadfile`` keeps a file on one worker, in order). Each test
checks its own instances; a sync also archives what other tests left in the log."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.cli import main
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.recovery.full_backup import queue_full_backup
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.records import ClaimBook, GoneBook
from imixs_archive.workflow.auth import Credentials
from imixs_archive.workflow.client import WorkflowClient
from support.engine import ADMIN, Engine, Instance, Reply, engine_url, file_digests
from support.workflow_double import WorkflowDouble

pytestmark = pytest.mark.skipif(
    not engine_url(),
    reason="no Imixs-Workflow engine (ARCHIVE_TEST_ENGINE, scripts/imixs-workflow)",
)

MB = 1024 * 1024


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(engine_url())


def _env(store: Path, **extra: str) -> dict[str, str]:
    env = {
        "ARCHIVE_DATA_DIR": str(store),
        "WORKFLOW_SERVICE_ENDPOINT": engine_url(),
        "WORKFLOW_SERVICE_USER": ADMIN[0],
        "WORKFLOW_SERVICE_PASSWORD": ADMIN[1],
        "WORKFLOW_SERVICE_AUTHMETHOD": "BASIC",
        "WORKFLOW_SYNC_INITIALDELAY": "0",
        "WORKFLOW_SYNC_INTERVAL": "200",
        "WORKFLOW_SYNC_RETRYDELAY": "0",
        "WORKFLOW_SYNC_DEADLOCK": "2000",
        "WORKFLOW_SYNC_MAXATTEMPTS": "50",
        "WORKFLOW_SYNC_WORKERS": "3",
        "WORKFLOW_REST_READTIMEOUT": "300",
    }
    env.update(extra)
    return env


@pytest.fixture
def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The settings of ``_env`` for ``main([...])`` in this process; the store's folder."""
    store = tmp_path / "store"
    for name, value in _env(store).items():
        monkeypatch.setenv(name, value)
    return store


_HELD: dict[str, Document] = {}
"""The engine's copy of each snapshot a test compared, read once (a snapshot never changes:
the 50 MB ones are not read again by the next test's comparison)."""


def _held(engine: Engine, sid: str) -> Document:
    if sid not in _HELD:
        held = engine.document(sid)
        assert held is not None, f"the engine lost {sid}"
        _HELD[sid] = held
    return _HELD[sid]


def _check_archived(store: Path, engine: Engine, instances: list[Instance]) -> int:
    """Every snapshot of these instances that the engine holds is archived, equal to the
    engine's copy (items, and every file's bytes); the archive verifies. How many."""
    count = 0
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for instance in instances:
            for sid in instance.snapshots:
                held = _held(engine, sid)
                stored = archive.load(sid)
                assert file_digests(stored) == file_digests(held), sid
                assert stored == held, sid
                count += 1
        assert verify(backend).ok
    return count


def _drained(engine: Engine, store: Path) -> bool:
    if engine.events():
        return False
    with SQLiteBackend(store) as backend:
        return not any(True for _ in ClaimBook(backend).all())


def _wait_drained(engine: Engine, store: Path, limit: float = 240) -> None:
    deadline = time.monotonic() + limit
    while not _drained(engine, store):
        assert time.monotonic() < deadline, f"{len(engine.events())} events left"
        time.sleep(0.5)


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "imixs_archive", *command],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(90) in (0, -15), log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


# ---- the workload: several users at once, attachments up to 50 MB ------------------------


@pytest.fixture(scope="module")
def workload(engine: Engine) -> tuple[list[Instance], dt.datetime]:
    """Tickets of three users, created and moved at the same time; attachments of a few
    bytes, kilobytes, megabytes, and one of 50 MB. Returns them and when they began."""
    began = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    rng = random.Random(47)
    sizes = [5, 700, 30_000, 300_000, 2 * MB]
    instances: list[Instance] = []
    failures: list[BaseException] = []

    def user_work(user: str, seed: int) -> None:
        own = random.Random(seed)
        try:
            for n in range(3):
                files = {f"{user}-{n}.bin": own.randbytes(own.choice(sizes))}
                ticket = engine.create(f"{user} ticket {n}", files, user=user)
                engine.move(ticket, 10, user=user, note="looked at")
                engine.move(ticket, 10, user=user, files={**files, "more.pdf": own.randbytes(9)})
                instances.append(ticket)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=user_work, args=(u, s)) for s, u in enumerate(USERS3)]
    for thread in threads:
        thread.start()
    big = engine.create("the big one", {"scan.pdf": rng.randbytes(50 * MB)})
    engine.move(big, 30, note="closed with its scan")
    instances.append(big)
    for thread in threads:
        thread.join()
    assert not failures, failures
    return instances, began


USERS3 = ("admin", "alex", "marty")


# ---- the double answers as the engine does -------------------------------------------------


def _answers(caller: Engine) -> list[tuple[str, int]]:
    """The status codes of the event log's and the restore's edge cases, sent by
    ``caller`` (to the engine or to the double) as the admin."""

    def send(method: str, path: str, body: bytes | None = None) -> Reply:
        return caller.call(method, path, body)

    out = []
    [event] = send("GET", "eventlog/engine.probe?maxCount=1").documents()
    eid = str(event.get_first("id"))
    for name, method, path in (
        ("lock", "POST", f"eventlog/lock/{eid}"),
        ("lock a locked entry", "POST", f"eventlog/lock/{eid}"),
        ("unlock", "POST", f"eventlog/unlock/{eid}"),
        ("unlock again", "POST", f"eventlog/unlock/{eid}"),
        ("unlock an unlocked entry", "POST", f"eventlog/unlock/{eid}"),
        ("lock a missing entry", "POST", "eventlog/lock/no-such-entry"),
        ("unlock a missing entry", "POST", "eventlog/unlock/no-such-entry"),
        ("lock before release", "POST", f"eventlog/lock/{eid}"),
        ("release", "POST", "eventlog/release/60000/engine.probe"),
        ("lock the released entry", "POST", f"eventlog/lock/{eid}"),
        ("delete a missing entry", "DELETE", "eventlog/no-such-entry"),
        ("read a missing document", "GET", "documents/no-such-document-1"),
        ("syncpoint after the last snapshot", "GET", "snapshot/syncpoint/32503680000000"),
    ):
        out.append((name, send(method, path).status))
    for name, body in (("put an event", b"<document/>"), ("put an empty XML body", b"")):
        out.append((name, send("PUT", "eventlog/engine.put/ref-1", body).status))
    bad = (
        ("unreadable XML", b"<document><item"),
        ("a bad id", to_xml(Document({"$uniqueid": "x"}))),
    )
    for name, body in bad:
        out.append((f"restore {name}", send("POST", "snapshot", body).status))
    empty = send("GET", "snapshot/syncpoint/32503680000000")
    out.append(("syncpoint after the last: documents", len(empty.documents())))
    return out


RESTORE_PROBE = b"<document><item name='$uniqueid'><value>x-1</value></item></document>"


def test_the_double_answers_as_the_engine_does(engine: Engine) -> None:
    """The event log's edge cases, an empty syncpoint and a restore without manager
    rights, sent to the engine and to the double: the same answers."""

    assert engine.call("PUT", "eventlog/engine.probe/probe-1", b"<document/>").status == 204
    real = _answers(engine)
    refused = engine.call("POST", "snapshot", RESTORE_PROBE, user="rita")
    real.append(("restore by a reader", refused.status))
    with WorkflowDouble(auth="BASIC", user="admin", password=ADMIN[1]) as double:
        double.put_event("engine.probe", "probe-1")
        caller = Engine(double.url)
        seen = _answers(caller)
        double.manager = False
        seen.append(("restore by a reader", caller.call("POST", "snapshot", RESTORE_PROBE).status))
    assert dict(seen) == dict(real), [(n, dict(seen)[n], s) for n, s in real if dict(seen)[n] != s]


def _after_delete(caller: Engine, uniqueid: str, snapshots: list[str]) -> list[object]:
    """What a workflow answers for a workitem's ``$snapshotid`` alone (``?items=``, as the
    restore reads it), and once it is deleted over ``DELETE /documents``."""
    [live] = caller.call("GET", f"documents/{uniqueid}?items=$snapshotid").documents()
    items = [sorted(live), live.get_first("$snapshotid") == snapshots[-1]]
    deleted = caller.call("DELETE", f"documents/{uniqueid}").status
    gone = [caller.call("GET", f"documents/{sid}").status for sid in snapshots]
    events = Engine.events(caller, ("snapshot.add", "snapshot.remove"))
    left = sorted(str(e.get_first("topic")) for e in events if e.get_first("ref") in snapshots)
    return [*items, deleted, caller.call("GET", f"documents/{uniqueid}").status, gone, left]


def test_a_deleted_instance_answers_as_on_the_engine(engine: Engine) -> None:
    """The engine answers ``?items=$snapshotid`` with that item alone, deletes a workitem
    with every snapshot of it and writes no event (its ``snapshot.add`` events stay, their
    documents answer 404): so does the double."""
    ticket = engine.create("deleted", {"x.bin": b"x"})
    engine.move(ticket, 10)
    real = _after_delete(engine, ticket.uniqueid, ticket.snapshots)
    with WorkflowDouble(auth="BASIC", user="admin", password=ADMIN[1]) as double:
        first = double.save(subject="deleted", files={"x.bin": b"x"})
        uid = str(first.get_first("$uniqueid")).rsplit("-", 1)[0]
        second = double.save(Document({"$uniqueid": uid, "subject": "moved"}))
        sids = [str(d.get_first("$uniqueid")) for d in (first, second)]
        seen = _after_delete(Engine(double.url), uid, sids)
    expected = [["$snapshotid"], True, 200, 404, [404, 404], ["snapshot.add", "snapshot.add"]]
    assert seen == real == expected


def _full_backup(url: str, topic: str) -> tuple[dict[str, bool], int]:
    """The full backup's walk over a workflow (``backup-events --full``): the snapshot id
    of each event it queued on ``topic`` with its NO_OVERWRITE flag, and the documents."""
    credentials = Credentials(user=ADMIN[0], password=ADMIN[1])
    with WorkflowClient(url, credentials=credentials) as client:
        done = queue_full_backup(client, topic, page_size=3)
        events = client.read_events([topic], max_count=10_000)
        for event in events:
            client.delete_event(event.id)
    return {e.ref: e.no_overwrite for e in events}, done.documents


def test_the_full_backup_walks_the_engine_as_the_double(engine: Engine) -> None:
    """Java's FullBackupService replaced (issue 45 item 6): the JPQL page walk reaches
    every workitem's newest snapshot on the engine (whose path is decoded twice: the
    query holds no ``%``) and the entries keep NO_OVERWRITE in their data; so on the
    double."""
    tag = f"full-{random.randrange(10**9)}"
    tickets = [engine.create(f"{tag} {n}") for n in range(4)]
    engine.move(tickets[0], 10)
    queued, documents = _full_backup(engine_url(), "snapshot.backup.probe")
    assert documents >= 4
    assert all(queued.get(t.snapshots[-1]) is True for t in tickets), queued
    assert not set(tickets[0].snapshots[:-1]) & set(queued)  # only the newest
    with WorkflowDouble(auth="BASIC", user="admin", password=ADMIN[1]) as double:
        first = double.save(subject="one")
        newest = double.save(double.workitems[str(first.get_first("$uniqueid"))[:36]])
        other = double.save(subject="two")
        seen, _ = _full_backup(double.url, "snapshot.backup.probe")
    assert seen == {str(d.get_first("$uniqueid")): True for d in (newest, other)}


# ---- sync, serve's sync loop, resync ------------------------------------------------------


def test_sync_archives_every_snapshot_through_sigkills(
    engine: Engine, workload: tuple[list[Instance], dt.datetime], tmp_path: Path
) -> None:
    """``sync`` (the loop, as a process) killed twice mid-round, then run to the end:
    every snapshot the engine wrote is archived, XML and file bytes equal, the event log
    is empty and no claim is left."""
    instances, _began = workload
    store, log = tmp_path / "store", tmp_path / "sync.log"
    env = _env(store)
    for _ in range(2):
        pending = len(engine.events())
        process = _start(["sync"], env, log)
        deadline = time.monotonic() + 120
        while len(engine.events()) > pending - 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)  # mid-round: a batch claimed, some done
        process.wait(30)
    assert engine.events(), "the kills should land before the end"
    process = _start(["sync"], env, log)
    try:
        _wait_drained(engine, store)
    finally:
        _stop(process, log)
    assert _check_archived(store, engine, instances) == sum(len(i.snapshots) for i in instances)
    assert "Traceback" not in log.read_text(), log.read_text()[-8000:]


def test_resync_walks_what_the_engine_holds(
    engine: Engine,
    workload: tuple[list[Instance], dt.datetime],
    in_process: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``resync --from`` the engine's first snapshot over its ``/snapshot/syncpoint``: a
    fresh archive gets every snapshot the engine holds, equal: the workload's, and each
    instance's newest of those before it, among them the engine's own job at its first
    start, a ``snapshot-adminp`` whose ``$file`` has a nil value only (it raised an
    IndexError before, which ended ``serve``'s catch-up thread)."""
    instances, began = workload
    held = _held_before(engine, began)
    assert any(d.get_first("type") == "snapshot-adminp" for d in held), "no job snapshot"
    assert main(["resync", "--from", _before_first(held)]) == 0
    out = capsys.readouterr().out
    assert "resync done" in out, out
    _check_resynced(in_process, engine, instances, held)


def _held_before(engine: Engine, began: dt.datetime) -> list[Document]:
    """The snapshots the engine holds from before the workload (its own jobs' among them)."""
    return engine.snapshots_between(0, int(began.timestamp() * 1000))


def _before_first(held: list[Document]) -> str:
    """A ``resync --from`` just before the engine's first snapshot."""
    first = min(d.get_first("$modified") for d in held) - dt.timedelta(milliseconds=1)
    return str(first.isoformat())


def _check_resynced(
    store: Path, engine: Engine, instances: list[Instance], held: list[Document]
) -> None:
    """Every snapshot of the workload archived equal, and each older instance's newest
    snapshot the engine holds (the jobs' ``$snapshot.history=1`` keeps only that one)."""
    assert _check_archived(store, engine, instances) == sum(len(i.snapshots) for i in instances)
    newest = {str(d.get_first("$uniqueid")).rsplit("-", 1)[0]: d for d in held}
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert all(archive.load(str(d.get_first("$uniqueid"))) == d for d in newest.values())


def _walked(store: Path) -> int:
    """The resync's ``sync.count`` saved in the store (snapshots walked)."""
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        return int(archive.state.load().get_first("sync.count") or 0)


def _walk_on(process: subprocess.Popen[bytes], store: Path, log: Path, steps: int) -> None:
    """Wait until the running resync has walked ``steps`` snapshots more than the store
    said when it began (its first save), or has ended."""
    deadline = time.monotonic() + 120
    while "resync from" not in log.read_text() and process.poll() is None:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    walked = _walked(store)
    while _walked(store) < walked + steps and process.poll() is None:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    assert process.poll() is None, "the resync should still be walking: " + log.read_text()


def test_resync_through_sigkills_and_an_engine_restart(
    engine: Engine, workload: tuple[list[Instance], dt.datetime], tmp_path: Path
) -> None:
    """``resync --from`` (a process) SIGKILLed twice mid-walk, each time run again without
    ``--from`` (on from the saved point); the third run meets the engine stopped and
    started again mid-walk, retries through it and walks to the end: the workload's
    snapshots and each older instance's newest are archived, equal to the engine's."""
    instances, began = workload
    held = _held_before(engine, began)
    store, log = tmp_path / "store", tmp_path / "resync.log"
    env = _env(store, WORKFLOW_SYNC_RETRYDELAY="200")  # 0.2 s, doubling: rides the restart
    command = ["resync", "--from", _before_first(held)]
    for _ in range(2):
        process = _start(command, env, log)
        _walk_on(process, store, log, 3)
        process.send_signal(signal.SIGKILL)  # mid-walk: some steps saved, one in hand
        process.wait(30)
        command = ["resync"]
    process = _start(command, env, log)
    try:
        _walk_on(process, store, log, 3)
        engine.restart(urlsplit(engine.url).port or 8081, history=0)
        assert process.wait(600) == 0, log.read_text()[-8000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    text = log.read_text()
    assert "again in" in text, text[-8000:]  # it met the engine away and retried
    assert text.count("resync from") == 3 and "resync done" in text, text[-8000:]
    assert "Traceback" not in text, text[-8000:]
    _check_resynced(store, engine, instances, held)


# ---- $snapshot.history and the engine's deletes --------------------------------------------


def _archive_ids(store: Path, uniqueid: str) -> list[str]:
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        return archive.index.instance_ids(uniqueid)


def test_history_and_deletes_as_the_engine_does_them(engine: Engine, in_process: Path) -> None:
    """Event 1100.20 sets ``$snapshot.history=2`` (the engine's ResultPlugin): the archive
    keeps the two newest snapshots of that instance. The engine deletes an instance with
    every snapshot of it and writes no event: the archive keeps what it has, and the
    snapshots it had not fetched yet answer 404 and are recorded as gone."""
    kept = engine.create("keeps two", {"k.bin": b"k" * 4000})
    engine.move(kept, 10)
    engine.move(kept, 20)  # "keep two": $snapshot.history = 2 from now on
    engine.move(kept, 10)
    archived = engine.create("archived, then deleted in the engine", {"d.bin": b"d" * 500})
    engine.move(archived, 10)
    assert main(["sync", "--once"]) == 0
    history = engine.document(kept.snapshots[-1])
    assert history is not None and history.get_values("$snapshot.history") == [2]
    # The sync's workers take the events in any order: an older snapshot archived after
    # the newest (which carries the setting; the older ones do not) is kept until the
    # instance's next snapshot cleans up (archive/snapshots.py, _apply_history).
    assert set(kept.snapshots[-2:]) <= set(_archive_ids(in_process, kept.uniqueid))
    assert _archive_ids(in_process, archived.uniqueid) == archived.snapshots
    engine.move(kept, 10)
    assert main(["sync", "--once"]) == 0
    assert _archive_ids(in_process, kept.uniqueid) == kept.snapshots[-2:]

    engine.delete(archived.uniqueid)
    assert all(engine.document(sid) is None for sid in archived.snapshots)
    early = engine.create("deleted before any sync", {"e.bin": b"e" * 700})
    engine.move(early, 10)
    engine.delete(early.uniqueid)
    refs = {str(e.get_first("ref")) for e in engine.events()}
    assert set(early.snapshots) <= refs  # their events stay: nothing announces a delete
    assert not any(str(e.get_first("topic")) == "snapshot.remove" for e in engine.events())
    assert main(["sync", "--once"]) == 0
    assert engine.events() == []
    assert _archive_ids(in_process, archived.uniqueid) == archived.snapshots
    assert _archive_ids(in_process, early.uniqueid) == []
    with SQLiteBackend(in_process) as backend:
        gone = {g.ref for g in GoneBook(backend).all()}
    assert set(early.snapshots) <= gone


# ---- restore -------------------------------------------------------------------------------


def _workitem(engine: Engine, uniqueid: str) -> Document:
    doc = engine.document(uniqueid)
    assert doc is not None, f"the engine has no {uniqueid}"
    return doc


def _restore(*args: str) -> int:
    return main(["restore", *args])


def test_restore_modes_post_what_the_engine_accepts(
    engine: Engine, in_process: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each restore mode against the engine: it accepts the snapshots, its instances are
    then at the restored snapshot (file bytes included) and can be processed on;
    ``--dry-run`` posts nothing."""
    tag = f"restore-{random.randrange(10**9)}"
    p = engine.create(f"{tag} P", {"p.pdf": random.randbytes(200_000)})
    engine.move(p, 10)
    engine.move(p, 10, files={"p.pdf": random.randbytes(90_000)})
    q = engine.create(f"{tag} Q", {"q.bin": b"q1"})
    r = engine.create(f"{tag} R", {"r.bin": b"r" * 3000})
    time.sleep(1.1)
    middle = dt.datetime.now(dt.UTC)
    time.sleep(1.1)
    engine.move(q, 10, files={"q.bin": b"q2"})
    assert main(["sync", "--once"]) == 0
    capsys.readouterr()

    # --as-of: the instances changed since go back to how they were (Q); others stay
    assert _restore("--as-of", middle.isoformat(), "--dry-run") == 0
    assert _workitem(engine, q.uniqueid).get_first("$snapshotid") == q.snapshots[1]
    not_yet = tmp_path / "not-yet.tsv"  # (by default in the current folder: the checkout's)
    assert _restore("--as-of", middle.isoformat(), "--not-yet-file", str(not_yet)) == 0
    assert _workitem(engine, q.uniqueid).get_first("$snapshotid") == q.snapshots[0]
    assert _workitem(engine, p.uniqueid).get_first("$snapshotid") == p.snapshots[-1]

    # --snapshot: one snapshot back (Q forward to its newest again)
    assert _restore("--snapshot", q.snapshots[1]) == 0
    assert _workitem(engine, q.uniqueid).get_first("$snapshotid") == q.snapshots[1]

    # --uniqueid: an instance the engine deleted comes back whole; --dry-run sends nothing
    engine.delete(p.uniqueid)
    assert _restore("--uniqueid", p.uniqueid, "--dry-run") == 0
    assert engine.document(p.uniqueid) is None
    assert _restore("--uniqueid", p.uniqueid) == 0
    _check_served(engine, in_process, p)

    # --from/--to (with a filter): the newest snapshot inside the range
    engine.delete(r.uniqueid)
    day_before = (middle - dt.timedelta(days=1)).isoformat()
    assert (
        _restore("--from", day_before, "--to", middle.isoformat(), "--filter", f"subject={tag} R")
        == 0
    )
    _check_served(engine, in_process, r)

    # --all: every instance at its newest archived snapshot (Q is current: not sent)
    engine.delete(q.uniqueid)
    assert _restore("--all", "--dry-run") == 0
    assert engine.document(q.uniqueid) is None
    assert _restore("--all") == 0
    _check_served(engine, in_process, q)

    # --source: a backup tree (the Java backup layout); what the engine lacks is posted
    backup = tmp_path / "backup"
    assert main(["backup", str(backup), "--create"]) == 0
    engine.delete(r.uniqueid)
    assert _restore("--source", str(backup), "--dry-run") == 0
    assert engine.document(r.uniqueid) is None
    assert _restore("--source", str(backup)) == 0
    newest = _archive_ids(in_process, r.uniqueid)[-1]  # the backup's: R's newest archived
    assert _workitem(engine, r.uniqueid).get_first("$snapshotid") == newest
    out = capsys.readouterr().out
    assert "Traceback" not in out


def _check_served(engine: Engine, store: Path, instance: Instance) -> None:
    """The engine holds the instance at its newest archived snapshot, with the archived
    file bytes, and processes it on (a new snapshot)."""
    newest = instance.snapshots[-1]
    assert _workitem(engine, instance.uniqueid).get_first("$snapshotid") == newest
    held = engine.document(newest)
    assert held is not None
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        assert file_digests(held) == file_digests(archive.load(newest))
    engine.move(
        instance, 30 if _workitem(engine, instance.uniqueid).get_first("$taskid") == 1100 else 10
    )
    assert _workitem(engine, instance.uniqueid).get_first("$snapshotid") == instance.snapshots[-1]


# ---- logins --------------------------------------------------------------------------------


def _form_session(engine: Engine, user: str, password: str) -> str:
    from urllib.parse import urlencode

    reply = engine.call(
        "POST",
        "j_security_check",
        urlencode({"j_username": user, "j_password": password}).encode(),
        user=None,
        content_type="application/x-www-form-urlencoded",
    )
    assert reply.status == 200, reply.status
    cookie = reply.headers.get("Set-Cookie", "")
    return cookie.split("JSESSIONID=", 1)[1].split(";", 1)[0]


@pytest.mark.parametrize(
    ("method", "user", "password"),
    [("BASIC", "admin", "adminadmin"), ("FORM", "admin", "adminadmin"), ("COOKIE", "", "")],
)
def test_each_login_the_sync_offers_against_the_engine_realm(
    engine: Engine,
    in_process: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    method: str,
    user: str,
    password: str,
) -> None:
    """BASIC, FORM (``j_security_check`` and its session) and COOKIE (a session cookie
    given as user = its name, password = its value) sync from the engine. Wrong
    credentials are one clear line, no traceback: ``sync --once`` pauses (exit 1, as
    documented), ``resync`` fails at its first step (it retried a 401 for minutes before),
    ``restore`` exits 7."""
    if method == "COOKIE":
        user, password = "JSESSIONID", _form_session(engine, *ADMIN)
    monkeypatch.setenv("WORKFLOW_SERVICE_AUTHMETHOD", method)
    monkeypatch.setenv("WORKFLOW_SERVICE_USER", user)
    monkeypatch.setenv("WORKFLOW_SERVICE_PASSWORD", password)
    ticket = engine.create(f"login {method}", {"l.bin": b"login"})
    assert main(["sync", "--once"]) == 0
    _check_archived(in_process, engine, [ticket])
    capsys.readouterr()
    monkeypatch.setenv("WORKFLOW_SERVICE_PASSWORD", password[:-1] + "x")
    said = "refused (HTTP 401)" if method == "FORM" else "HTTP 401 (check the credentials)"
    engine.create(f"login {method}, refused", {"l.bin": b"refused"})
    assert main(["sync", "--once"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and said in err, err
    began = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).isoformat()
    assert main(["resync", "--from", began]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err and said in err, (out, err)
    assert _restore("--snapshot", ticket.snapshots[0]) == 7
    err = capsys.readouterr().err
    assert "Traceback" not in err and said in err, err


# ---- last: the engine restarted (with Imixs' default SNAPSHOT_HISTORY=1 from then on) -------


def test_serve_syncs_through_an_engine_restart(engine: Engine, tmp_path: Path) -> None:
    """``serve``'s sync loop while the engine is stopped and started again mid-sync: what
    was written before and after is archived. The engine comes back with Imixs' default
    ``SNAPSHOT_HISTORY=1``: each save deletes the instance's older snapshots, so the ones
    the sync had not fetched yet answer 404 and are recorded as gone, never retried; what
    the engine holds is archived. (Last in this file: the engine keeps that setting.)"""
    store, log = tmp_path / "store", tmp_path / "serve.log"
    rng = random.Random(3)
    before = [
        engine.create(f"before restart {n}", {"a.bin": rng.randbytes(3 * MB)}) for n in range(4)
    ]
    process = _start(["serve", "--port", "0"], _env(store), log)
    try:
        deadline = time.monotonic() + 120
        while len(engine.events()) >= 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # the first of them archived: the sync is mid-way
        engine.restart(urlsplit(engine.url).port or 8081, history=1)
        after = [
            engine.create(f"after restart {n}", {"b.bin": rng.randbytes(1000)}) for n in range(3)
        ]
        for ticket in after:
            engine.move(ticket, 10)
            engine.move(ticket, 30)
        _wait_drained(engine, store)
    finally:
        _stop(process, log)
    _check_archived(store, engine, before)
    newest = [Instance(t.uniqueid, t.snapshots[-1:]) for t in after]
    _check_archived(store, engine, newest)  # what the engine still holds
    older = [sid for t in after for sid in t.snapshots[:-1]]
    assert all(engine.document(sid) is None for sid in older)  # SNAPSHOT_HISTORY=1
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        gone = {g.ref for g in GoneBook(backend).all()}
        assert all(archive.exists(sid) or sid in gone for sid in older)
    assert "Traceback" not in log.read_text(), log.read_text()[-8000:]
