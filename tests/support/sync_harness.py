"""Sync services over the workflow double, for the sync's tests: built from one config (a
test changes what it needs), and every one closed when its test ends (the autouse fixture
``close_services`` of ``tests/sync/conftest.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.workflow import WorkflowClient
from support.workflow_double import WorkflowDouble

FAST = SyncConfig(
    interval_ms=20,
    initial_delay_ms=0,
    deadlock_ms=60_000,
    workers=4,
    max_attempts=4,
    retry_delay_ms=0,
    batch=100,
    pause_max_ms=100,
    catchup=False,
)
"""Rounds every 20 ms, no catch-up, no retry delay: a test changes what it needs."""

OPEN: list[SyncService] = []
"""The services opened by the running test."""


def open_service(
    double: WorkflowDouble,
    archive: Archive,
    *,
    config: SyncConfig = FAST,
    read_timeout: float = 1.0,
    instance: str | None = None,
    **changes: Any,
) -> SyncService:
    """A service over ``archive`` and the double, with ``config`` and ``changes``."""
    client = WorkflowClient(double.url, read_timeout=read_timeout, connect_timeout=1.0)
    service = SyncService(archive, client, replace(config, **changes), instance=instance)
    OPEN.append(service)
    return service


def close_services() -> None:
    while OPEN:
        service = OPEN.pop()
        service.close(timeout=10)
        service.client.close()


def assert_archived(archive: Archive, double: WorkflowDouble, *, only: bool = True) -> None:
    """Every snapshot the double holds is archived, equal (files by hash) to it (``only``:
    and nothing else), and the archive verifies."""
    if only:
        assert sorted(archive.index.iter_snapshot_ids()) == sorted(double.snapshots)
    for sid, snapshot in double.snapshots.items():
        assert archive.load(sid) == snapshot
    assert archive.verify().ok
