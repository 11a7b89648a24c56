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
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.sync_records import ClaimBook, GoneBook
from imixs_archive.archive.verify import verify
from imixs_archive.cli import main
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.engine import ADMIN, Engine, Instance, engine_url, file_digests
from support.workflow_double import WorkflowDouble

pytestmark = pytest.mark.skipif(
    not engine_url(), reason="no Imixs-Workflow engine (ARCHIVE_TEST_ENGINE, scripts/imixs-workflow)"
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


def _check_archived(store: Path, engine: Engine, instances: list[Instance]) -> int:
    """Every snapshot of these instances that the engine holds is archived, equal to the
    engine's copy (items, and every file's bytes); the archive verifies. How many."""
    count = 0
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for instance in instances:
            for sid in instance.snapshots:
                held = engine.document(sid)
                assert held is not None, f"the engine lost {sid}"
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
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
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


def _answers(call: object) -> list[tuple[str, int]]:
    """The status codes of the event log's and the restore's edge cases, through
    ``call(method, path, body, user)`` against an engine or the double."""
    from support.engine import Reply

    def send(method: str, path: str, body: bytes | None = None, user: str = "admin") -> Reply:
        return call(method, path, body, user)  # type: ignore[operator, no-any-return]

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
    bad = (("unreadable XML", b"<document><item"), ("a bad id", to_xml(Document({"$uniqueid": "x"}))))
    for name, body in bad:
        out.append((f"restore {name}", send("POST", "snapshot", body).status))
    empty = send("GET", "snapshot/syncpoint/32503680000000")
    out.append(("syncpoint after the last: documents", len(empty.documents())))
    return out


RESTORE_PROBE = b"<document><item name='$uniqueid'><value>x-1</value></item></document>"


def test_the_double_answers_as_the_engine_does(engine: Engine) -> None:
    """The event log's edge cases, an empty syncpoint and a restore without manager
    rights, sent to the engine and to the double: the same answers."""

    def on_engine(method: str, path: str, body: bytes | None, user: str) -> object:
        return engine.call(method, path, body, user=user)

    assert engine.call("PUT", "eventlog/engine.probe/probe-1", b"<document/>").status == 204
    real = _answers(on_engine)
    real.append(("restore by a reader", engine.call("POST", "snapshot", RESTORE_PROBE, user="rita").status))
    with WorkflowDouble(auth="BASIC", user="admin", password=ADMIN[1]) as double:
        double.put_event("engine.probe", "probe-1")
        caller = Engine(double.url)

        def on_double(method: str, path: str, body: bytes | None, user: str) -> object:
            return caller.call(method, path, body, user=user)

        seen = _answers(on_double)
        double.manager = False
        seen.append(("restore by a reader", caller.call("POST", "snapshot", RESTORE_PROBE).status))
    assert dict(seen) == dict(real), [(n, dict(seen)[n], s) for n, s in real if dict(seen)[n] != s]
