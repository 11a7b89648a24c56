"""Failed sync events and the dead-letter list: the rules (the rows are the archive's
``FailureBook``, ``sync/records.py``, in ``archive_sync_failures``).

A row per failed event, keyed by the workflow's event id. Only the process whose claim on
the event stands (``archive_sync_claims``: the last to claim it, checked before it works
on it) writes its row, and each write is one row's upsert, so every process sees every
other's failures.

``retry``: the event stays in the workflow's event log (and its claim in the archive); no
process takes it before ``next_attempt``. ``dead``: it failed ``max_attempts`` times; the
event was deleted from the workflow's log (so it does not block it) and this row keeps
what is needed to try again: topic and ref. A retry on demand puts a fresh event into the
workflow's log (``PUT /eventlog/{topic}/{ref}``) and removes the row.
"""

from __future__ import annotations

from imixs_archive.sync.records import DEAD, RETRY, FailedEvent, FailureBook
from imixs_archive.timezones import now_ms

MAX_ERROR = 2000
"""Characters of an error message kept."""


def retry_delay_ms(attempts: int, base_ms: int) -> int:
    """Wait after the n-th failed attempt: base, 2x, 4x ... at most 64x the base."""
    return int(base_ms * 2 ** min(max(attempts - 1, 0), 6))


def record_failure(
    book: FailureBook,
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
    known = book.get(event_id)
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
    book.save(failed)
    return failed
