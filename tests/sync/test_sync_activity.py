"""What the sync loop says it is doing: the wait for its first round (a 30 s pause that
looked like a hang), the events it left in the workflow's event log, its rounds in the log
of ``imixs-archive sync``."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.sync.counters import FIRST, NEXT, activity, describe, pending_text
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.sync.status import sync_status
from imixs_archive.workflow import WorkflowClient
from support.sync_harness import FAST
from support.workflow_double import WorkflowDouble

CONFIG = replace(FAST, interval_ms=60_000, workers=2, max_attempts=10, retry_delay_ms=60_000)
SEED = 3


@pytest.fixture
def client(double: WorkflowDouble) -> Iterator[WorkflowClient]:
    with WorkflowClient(double.url, read_timeout=2.0, connect_timeout=2.0) as opened:
        yield opened


def _until(check: object, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.02)
    assert check(), "not in time"  # type: ignore[operator]


def test_the_wait_for_the_first_round_is_said_with_its_seconds(
    archive: Archive, client: WorkflowClient, caplog: pytest.LogCaptureFixture
) -> None:
    config = SyncConfig(**{**vars(CONFIG), "initial_delay_ms": 30_000})
    service = SyncService(archive, client, config, instance="waiting-1")
    caplog.set_level(logging.INFO, logger="imixs_archive.sync")
    began = time.monotonic()
    service.start()
    try:
        _until(lambda: service.counters.as_dict()["waiting"] == FIRST)
        values = service.counters.as_dict()
        words = describe(activity(values, config.initial_delay_ms))
        waited = time.monotonic() - began  # (not a bet of 5 s on the machine's speed)
        assert words.startswith("waiting to start: the first round starts in "), words
        seconds = int(words.split(" in ", 1)[1].split(" ", 1)[0])
        assert 30 - waited - 1 <= seconds <= 30, (words, waited)
        assert "WORKFLOW_SYNC_INITIALDELAY is 30 s" in words
        assert pending_text(values) == "not read yet"
        later = describe(
            activity(values, config.initial_delay_ms, at=int(values["next_round"]) - 5000)
        )
        assert " starts in 5 s " in later, later
        assert "first round in 30 s (WORKFLOW_SYNC_INITIALDELAY)" in caplog.text
        # another process's `sync --status` sees the row of a process that has started
        assert [row["state"] for row in sync_status(archive).instances] == ["starting"]
        started = time.monotonic()
    finally:
        service.close(timeout=10)
    assert time.monotonic() - started < 15  # a stop does not wait out the 30 s delay
    assert describe(activity(service.counters.as_dict(), 30_000)) == "stopped"
    assert [row["state"] for row in sync_status(archive).instances] == ["stopped"]


def test_events_left_in_the_event_log_are_pending(
    archive: Archive,
    double: WorkflowDouble,
    client: WorkflowClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sids = [str(double.save(subject=f"#{n}").get_first("$uniqueid")) for n in range(5)]
    double.inject("status", path=f"^/api/documents/{sids[1]}", status=500)
    double.inject("status", path=f"^/api/documents/{sids[3]}", status=500)
    caplog.set_level(logging.INFO, logger="imixs_archive.sync")
    service = _rounds(SyncService(archive, client, CONFIG, instance="pending-1"), 1)
    assert len(double.events()) == 2
    values = service.counters.as_dict()
    assert values["pending"] == 2 and values["rounds"] == 1
    assert pending_text(values) == "2"
    words = describe(activity(values, 0, at=int(values["next_round"]) - 59_000))
    assert words == "stopped"  # rounds=1: the loop ended after its round
    assert "round: 5 events read (3 done, 2 failed), 2 left in the event log" in caplog.text


def test_between_rounds_the_loop_says_what_is_pending_and_when_it_looks_again(
    archive: Archive,
    double: WorkflowDouble,
    client: WorkflowClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for n in range(3):
        double.save(subject=f"#{n}")
    config = SyncConfig(**{**vars(CONFIG), "batch": 2})
    caplog.set_level(logging.INFO, logger="imixs_archive.sync")
    service = SyncService(archive, client, config, instance="between-1")
    service.start()
    try:
        _until(lambda: service.counters.as_dict()["waiting"] == NEXT)
        values = service.counters.as_dict()
        words = describe(activity(values, 0))
        assert words.startswith("between rounds (events pending: 0); next round in "), words
        assert words.endswith(" s") and 55 <= int(words.split(" in ")[1].split()[0]) <= 60
    finally:
        service.close(timeout=10)
    assert double.events() == []
    # the first round read a full batch: more may be waiting, and the next round is now
    assert "round: 2 events read (2 done), 0 or more left in the event log; next round now" in (
        caplog.text
    )
    assert "round: 1 events read (1 done), 0 left in the event log; next round in 60 s" in (
        caplog.text
    )


def test_rounds_that_change_nothing_are_logged_once(
    archive: Archive,
    double: WorkflowDouble,
    client: WorkflowClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An event waiting for its retry is read every round: the log says so once."""
    sid = str(double.save(subject="fails").get_first("$uniqueid"))
    double.inject("status", path=f"^/api/documents/{sid}", status=500)
    config = SyncConfig(**{**vars(CONFIG), "interval_ms": 20})
    caplog.set_level(logging.INFO, logger="imixs_archive.sync")
    service = _rounds(SyncService(archive, client, config, instance="quiet-1"), 10)
    rounds = [r.getMessage() for r in caplog.records if r.getMessage().startswith("round:")]
    assert rounds == [
        "round: 1 events read (1 failed), 1 left in the event log; next round in 0.02 s",
        "round: 1 events read (1 deferred), 1 left in the event log; next round in 0.02 s",
    ]
    assert service.counters.as_dict()["rounds"] == 10


def _rounds(service: SyncService, rounds: int) -> SyncService:
    """``rounds`` rounds of the service at once, then closed."""
    try:
        service.run(initial_delay=False, rounds=rounds)
    finally:
        service.close(timeout=10)
    return service
