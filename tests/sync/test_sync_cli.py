"""``imixs-archive sync`` and ``resync`` on the command line: in process, and as real
processes that are SIGKILLed mid-run, stopped with SIGTERM, and run two at once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.cli import main
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.sync.records import ClaimBook
from imixs_archive.sync.status import sync_status
from support.workflow_double import JavaArchiveBeside, WorkflowDouble


@pytest.fixture
def double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble(auth="BASIC", seed=11) as running:
        yield running


def _env(double: WorkflowDouble, store: Path, **extra: str) -> dict[str, str]:
    env = {
        "ARCHIVE_DATA_DIR": str(store),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SERVICE_USER": double.user,
        "WORKFLOW_SERVICE_PASSWORD": double.password,
        "WORKFLOW_SYNC_INITIALDELAY": "0",
        "WORKFLOW_SYNC_INTERVAL": "50",
        "WORKFLOW_SYNC_RETRYDELAY": "0",
        "WORKFLOW_REST_READTIMEOUT": "2000ms",
        "WORKFLOW_SYNC_WORKERS": "3",
    }
    env.update(extra)
    return env


@pytest.fixture
def environment(double: WorkflowDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = tmp_path / "store"
    for name, value in _env(double, store).items():
        monkeypatch.setenv(name, value)
    return store


def _populate(double: WorkflowDouble, count: int, seed: int = 5) -> None:
    rng = random.Random(seed)
    common = rng.randbytes(200_000)
    for n in range(count):
        files = {"common.pdf": common, f"n{n}.bin": rng.randbytes(rng.randrange(1000, 80_000))}
        double.save(subject=f"#{n}", files=files if n % 4 else None)


def _check_exactly_once(double: WorkflowDouble, store: Path) -> None:
    assert double.events() == []
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        ids = list(archive.index.iter_snapshot_ids())
        assert len(ids) == len(set(ids)) == len(double.snapshots)
        for sid, snapshot in double.snapshots.items():
            assert archive.load(sid) == snapshot
        assert verify(backend).ok


def test_once_status_and_retry(
    double: WorkflowDouble, environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _populate(double, 4)
    bad = double.save()
    bad_id = str(bad.get_first("$uniqueid"))
    double.inject("status", path=f"^/api/documents/{bad_id}$")
    os.environ["WORKFLOW_SYNC_MAXATTEMPTS"] = "2"
    assert main(["sync", "--once"]) == 1  # one event failed
    assert "5 events read: 4 done, 1 failed" in capsys.readouterr().out
    assert main(["sync", "--once"]) == 1
    assert main(["sync", "--status"]) == 0
    out = capsys.readouterr().out
    assert "dead letters: 1" in out and bad_id in out and "retrying: 0" in out
    assert main(["sync", "--status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["dead_letters"][0]["ref"] == bad_id
    assert status["instances"][0]["dead_letters"] == 1
    double.clear_faults()
    assert main(["sync", "--retry", bad_id]) == 0
    assert f"re-queued snapshot.add {bad_id}" in capsys.readouterr().out
    assert main(["sync", "--retry", "nothing"]) == 1
    assert main(["sync", "--once"]) == 0
    _check_exactly_once(double, environment)


def test_resync_command(
    double: WorkflowDouble, environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(3):
        double.save(modified=1_700_000_000_000 + n, event=False)
    assert main(["resync", "--cancel"]) == 0
    assert "no resync running" in capsys.readouterr().out
    assert main(["resync", "--from", "2023-11-14T00:00:00+00:00"]) == 0
    assert "resync done" in capsys.readouterr().out
    assert main(["sync", "--status"]) == 0
    assert "sync count: 3" in capsys.readouterr().out
    with SQLiteBackend(environment) as backend:
        assert sync_status(Archive(backend)).point == 1_700_000_000_002


def test_resync_from_without_an_offset_is_read_in_archive_timezone(
    double: WorkflowDouble,
    environment: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for n in range(3):  # 2023-11-14T22:13:20Z: 17:13 in New York, 07:13 next day in Tokyo
        double.save(modified=1_700_000_000_000 + n, event=False)
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "America/New_York")
    assert main(["resync", "--from", "2023-11-14T17:30:00"]) == 0  # 22:30Z: after them
    assert "0 newly archived" in capsys.readouterr().out
    monkeypatch.setenv("ARCHIVE_TIMEZONE", "Asia/Tokyo")
    assert main(["resync", "--from", "2023-11-15T07:00:00"]) == 0  # 22:00Z (UTC: 07:00Z)
    assert "3 newly archived" in capsys.readouterr().out
    with SQLiteBackend(environment) as backend:
        assert sync_status(Archive(backend)).point == 1_700_000_000_002


def test_sync_needs_an_endpoint(environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", "")
    assert main(["sync", "--once"]) == 2


def _start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A sync process; its log goes to a file (a pipe nobody reads could fill up)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "imixs_archive", "sync"],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=out,
        )


def _claims(store: Path) -> int:
    with SQLiteBackend(store) as backend:
        return sum(1 for _ in ClaimBook(backend).all())


def _wait_empty(double: WorkflowDouble, store: Path, limit: float = 90) -> None:
    """Until the event log is empty and no claim is left in the archive."""
    deadline = time.monotonic() + limit
    while (double.events() or _claims(store)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert double.events() == []
    assert _claims(store) == 0


@pytest.mark.slow
def test_sigkill_mid_run_then_restart_loses_nothing(double: WorkflowDouble, tmp_path: Path) -> None:
    # The real workflow's release deletes the events a killed process held locked: a Java
    # archive beside calls it all along (every 0.5 s here, 5 s in Java's default).
    _populate(double, 60, seed=6)
    double.inject("slow", probability=0.3, delay=0.1)
    double.inject("status", probability=0.1)
    double.inject("status", path="^/api/eventlog/", probability=0.1)
    store = tmp_path / "store"
    env = _env(
        double,
        store,
        WORKFLOW_SYNC_DEADLOCK="800",
        WORKFLOW_SYNC_MAXATTEMPTS="100",
        WORKFLOW_SYNC_CATCHUP_LAG="0",
    )
    log = tmp_path / "sync.log"
    rng = random.Random(4)
    with JavaArchiveBeside(double, interval=0.5) as java:
        for _ in range(4):
            # Killed once it has handled a few events (a fixed time is too long on a fast
            # machine), at a random point of its work on the next ones.
            target = len(double.events()) - rng.randint(2, 8)
            process = _start(env, log)
            deadline = time.monotonic() + 60
            while len(double.events()) > target and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.05))
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        assert double.events(), "the kills should land before the end"
        process = _start(env, log)
        _wait_empty(double, store)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
    assert java.rounds > 0
    _check_exactly_once(double, store)
    with SQLiteBackend(store) as backend:
        assert sync_status(Archive(backend)).dead_letters == []


@pytest.mark.slow
def test_three_processes_beside_a_java_archive_lose_nothing(
    double: WorkflowDouble, tmp_path: Path
) -> None:
    _populate(double, 80, seed=7)
    double.inject("slow", probability=0.2, delay=0.05)
    double.inject("status", probability=0.15)
    double.inject("status", path="^/api/eventlog/", probability=0.15)
    store = tmp_path / "store"
    env = _env(double, store, WORKFLOW_SYNC_DEADLOCK="1000", WORKFLOW_SYNC_MAXATTEMPTS="100")
    log = tmp_path / "sync.log"
    with JavaArchiveBeside(double, interval=0.5) as java:
        processes = [_start(env, log) for _ in range(3)]
        try:
            _wait_empty(double, store)
            for process in processes:
                process.send_signal(signal.SIGINT)
            for process in processes:
                assert process.wait(60) == 0, log.read_text()
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait(10)
    assert java.rounds > 0
    _check_exactly_once(double, store)
    with SQLiteBackend(store) as backend:
        status = sync_status(Archive(backend))
    assert len(status.instances) == 3 and status.dead_letters == []
    assert sum(row["events"] for row in status.instances) >= 80
    assert all(row["state"] == "stopped" for row in status.instances)


def test_the_sync_command_says_when_its_first_round_starts_and_what_each_round_did(
    double: WorkflowDouble, tmp_path: Path
) -> None:
    """A 30 s wait before the first round printed nothing: it looked like a hang."""
    store = tmp_path / "store"
    log = tmp_path / "sync.log"
    process = _start(_env(double, store, WORKFLOW_SYNC_INITIALDELAY="30s"), log)
    try:
        deadline = time.monotonic() + 60
        while "first round" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert "first round in 30 s (WORKFLOW_SYNC_INITIALDELAY)" in log.read_text()
    _populate(double, 3)
    log.write_text("")
    process = _start(_env(double, store, WORKFLOW_SYNC_INTERVAL="200"), log)
    try:
        _wait_empty(double, store)
        deadline = time.monotonic() + 60
        while "no events pending" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # five more idle rounds: said once, not every 0.2 s
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert "round: 3 events read (3 done), 0 left in the event log; next round in 0.2 s" in text
    assert text.count("no events pending in the workflow's event log; next round in 0.2 s") == 1
    assert "first round in" not in text  # WORKFLOW_SYNC_INITIALDELAY 0: no wait


def test_a_failed_event_whose_snapshot_was_archived_since_is_not_shown_retrying(
    double: WorkflowDouble,
    environment: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It failed, waits an hour for its next attempt, and meanwhile its snapshot came in
    another way (an import here): the status says so, and the next round forgets it and
    deletes its event instead of waiting for the hour."""
    monkeypatch.setenv("WORKFLOW_SYNC_RETRYDELAY", "3600000")
    monkeypatch.setenv("WORKFLOW_SYNC_CATCHUP", "false")
    doc = double.save(subject="fails once")
    snapshot_id = str(doc.get_first("$uniqueid"))
    double.inject("status", path=f"^/api/documents/{snapshot_id}$")
    assert main(["sync", "--once"]) == 1
    double.clear_faults()
    source = tmp_path / "it.xml"
    source.write_bytes(to_xml(double.snapshots[snapshot_id]))
    assert main(["import", str(source)]) == 0
    capsys.readouterr()
    assert main(["sync", "--status"]) == 0
    out = capsys.readouterr().out
    assert (
        "retrying: 0" in out
        and f"archived since (forgotten in the sync's next round): {snapshot_id}" in out
    )
    assert main(["sync", "--once"]) == 0
    with SQLiteBackend(environment) as backend:
        status = sync_status(Archive(backend))
    assert status.retrying == status.archived_since == [] and double.events() == []
