"""Failed sync events and the dead-letter list, kept in the archive (``archive_sync_failures``).

A row per failed event, keyed by the workflow's event id. Only the process that holds
the event's lock in the workflow writes its row, so two sync processes never race on
one row, and every process sees every other's failures.

``retry``: the event was unlocked and goes back to the workflow's event log queue; no
process takes it before ``next_attempt``. ``dead``: it failed ``max_attempts`` times; the
event was deleted from the workflow's log (so it does not block it) and this row keeps
what is needed to try again: topic and ref. A retry on demand puts a fresh event into the
workflow's log (``PUT /eventlog/{topic}/{ref}``) and removes the row.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_SYNC_FAILURES

RETRY = "retry"
DEAD = "dead"
MAX_ERROR = 2000
"""Characters of an error message kept."""


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class FailedEvent:
    event_id: str
    topic: str
    ref: str
    status: str
    attempts: int
    next_attempt: int
    first_failed: int
    last_failed: int
    error: str

    @property
    def dead(self) -> bool:
        return self.status == DEAD

    def due(self, at: int) -> bool:
        return self.status == RETRY and self.next_attempt <= at


def retry_delay_ms(attempts: int, base_ms: int) -> int:
    """Wait after the n-th failed attempt: base, 2x, 4x ... at most 64x the base."""
    return int(base_ms * 2 ** min(max(attempts - 1, 0), 6))


class FailureBook:
    """The failed events of one archive."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def get(self, event_id: str) -> FailedEvent | None:
        row = self.backend.get(ARCHIVE_SYNC_FAILURES, {"event_id": event_id})
        return FailedEvent(**row) if row is not None else None

    def all(self) -> Iterator[FailedEvent]:
        for row in self.backend.scan(ARCHIVE_SYNC_FAILURES):
            yield FailedEvent(**row)

    def dead_letters(self) -> list[FailedEvent]:
        return sorted((f for f in self.all() if f.dead), key=lambda f: f.last_failed)

    def record(
        self,
        event_id: str,
        topic: str,
        ref: str,
        error: str,
        *,
        max_attempts: int,
        base_delay_ms: int,
    ) -> FailedEvent:
        """One more failed attempt: ``retry`` with a later ``next_attempt``, or ``dead``."""
        at = now_ms()
        known = self.get(event_id)
        attempts = (known.attempts if known else 0) + 1
        dead = attempts >= max_attempts
        failed = FailedEvent(
            event_id=event_id,
            topic=topic,
            ref=ref,
            status=DEAD if dead else RETRY,
            attempts=attempts,
            next_attempt=at if dead else at + retry_delay_ms(attempts, base_delay_ms),
            first_failed=known.first_failed if known else at,
            last_failed=at,
            error=error[:MAX_ERROR],
        )
        self.backend.put(ARCHIVE_SYNC_FAILURES, [asdict(failed)])
        return failed

    def clear(self, event_id: str) -> None:
        self.backend.delete(ARCHIVE_SYNC_FAILURES, {"event_id": event_id})

    def find(self, key: str) -> list[FailedEvent]:
        """Dead letters whose event id or snapshot id (ref) is ``key``."""
        return [f for f in self.dead_letters() if key in (f.event_id, f.ref)]
