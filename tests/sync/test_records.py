"""The sync's records (``sync/records.py``): failed events and each
process's counters, typed, on each backend."""

from __future__ import annotations

import pytest

from imixs_archive.storage.base import Backend
from imixs_archive.sync.failures import record_failure
from imixs_archive.sync.records import (
    DEAD,
    RETRY,
    FailedEvent,
    FailureBook,
    InstanceBook,
    SyncInstance,
)

pytestmark = pytest.mark.both_stores  # store-facing: the sync's book tables on each store


def _failed(event_id: str, status: str, last: int) -> FailedEvent:
    return FailedEvent(event_id, "snapshot.add", f"ref-{event_id}", status, 2, 50, 10, last, "x")


def test_failures_round_trip_and_dead_letters_oldest_first(backend: Backend) -> None:
    book = FailureBook(backend)
    assert book.get("e1") is None and list(book.all()) == []
    for failed in (_failed("e1", DEAD, 300), _failed("e2", RETRY, 100), _failed("e3", DEAD, 200)):
        book.save(failed)
    assert book.get("e2") == _failed("e2", RETRY, 100)
    assert [f.event_id for f in book.dead_letters()] == ["e3", "e1"]
    assert book.get("e2") is not None and book.get("e2").due(50)  # type: ignore[union-attr]
    book.clear("e3")
    assert sorted(f.event_id for f in book.all()) == ["e1", "e2"]


def test_record_failure_counts_attempts_until_dead(backend: Backend) -> None:
    book = FailureBook(backend)
    first = record_failure(book, "e", "t", "r", "boom", max_attempts=2, base_delay_ms=1000)
    assert (first.status, first.attempts) == (RETRY, 1)
    assert first.next_attempt - first.last_failed == 1000
    second = record_failure(book, "e", "t", "r", "again", max_attempts=2, base_delay_ms=1000)
    assert (second.status, second.attempts, second.error) == (DEAD, 2, "again")
    assert second.first_failed == first.first_failed
    assert book.get("e") == second


def test_instances_saved_listed_by_name_and_forgotten(backend: Backend) -> None:
    book = InstanceBook(backend)
    counters = {"state": "running", "started": 5, "updated": 9, "archived": 3, "gone": 7}
    book.save(SyncInstance.of({**counters, "instance": "host-b"}))
    book.save(SyncInstance.of({"instance": "host-a", "updated": 4}))
    listed = book.all()
    assert [i.instance for i in listed] == ["host-a", "host-b"]
    assert listed[0] == SyncInstance(instance="host-a", updated=4)  # the rest 0 or empty
    assert (listed[1].state, listed[1].archived, listed[1].bytes) == ("running", 3, 0)
    book.forget("host-a")
    assert [i.instance for i in book.all()] == ["host-b"]
