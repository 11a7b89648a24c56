"""What ``imixs-archive sync --status`` shows, and retrying dead letters on demand.

The sync point and its counters come from the service state ('0' row, Java's items);
each sync process's counters from ``archive_sync_instances``; failed events and dead
letters from ``archive_sync_failures``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.sync.records import FailedEvent, Gone
from imixs_archive.timezones import epoch_ms, now_ms
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.events import TOPIC_REMOVE

GONE_LISTED = 50
STALE_MS = 7 * 24 * 3600 * 1000
"""Counters of a process not heard of for this long are no longer shown, and deleted when
a sync starts (each process writes a row of its own: hostname and process id)."""


def forget_stale_instances(archive: Archive) -> int:
    """Delete the counters of processes not heard of for ``STALE_MS``; how many."""
    oldest = now_ms() - STALE_MS
    book = archive.sync_records.instances
    stale = [known.instance for known in book.all() if known.updated < oldest]
    for instance in stale:
        book.forget(instance)
    return len(stale)


@dataclass
class SyncStatus:
    point: int | None = None
    count: int = 0
    size: int = 0
    resync: dict[str, Any] = field(default_factory=dict)
    instances: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[FailedEvent] = field(default_factory=list)
    retrying: list[FailedEvent] = field(default_factory=list)
    archived_since: list[FailedEvent] = field(default_factory=list)
    """Failed events whose snapshot was archived since (by another event, the catch-up, an
    import): not retried; the sync forgets them in its next round."""
    gone_count: int = 0
    """Snapshots the workflow no longer held when their event was handled (404)."""
    gone: list[Gone] = field(default_factory=list)
    """The latest of them (at most ``GONE_LISTED``)."""
    claims: int = 0
    """Events taken by sync processes and not done yet."""
    catchup_point: int | None = None
    """$modified (epoch ms) up to which every snapshot the workflow holds is archived."""
    catchup_skipped: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gone_count": self.gone_count,
            "gone": [vars(g) for g in self.gone],
            "claims": self.claims,
            "catchup_point": self.catchup_point,
            "catchup_skipped": self.catchup_skipped,
            "sync.point": self.point,
            "sync.count": self.count,
            "sync.size": self.size,
            "resync": self.resync,
            "instances": self.instances,
            "dead_letters": [vars(f) for f in self.dead_letters],
            "retrying": [vars(f) for f in self.retrying],
            "archived_since": [vars(f) for f in self.archived_since],
        }


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, dt.datetime):
        return epoch_ms(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def sync_status(archive: Archive) -> SyncStatus:
    books = archive.sync_records
    state = archive.state.load()
    status = SyncStatus(
        point=_int(state.get_first("sync.point")),
        count=_int(state.get_first("sync.count")) or 0,
        size=_int(state.get_first("sync.size")) or 0,
        resync={
            name.removeprefix("resync."): state.get_first(name)
            for name in state
            if name.startswith("resync.") and name != "resync.cancel"
        },
    )
    if status.resync.get("status") == "running" and books.progress.resync_stop_asked():
        status.resync["cancel"] = True  # shown as a stop asked for
    oldest = now_ms() - STALE_MS
    status.instances = [asdict(i) for i in books.instances.all() if i.updated >= oldest]
    failures = sorted(books.failures.all(), key=lambda f: f.last_failed)
    status.dead_letters = [f for f in failures if f.dead]
    for failed in failures:
        if failed.dead:
            continue
        done = failed.topic != TOPIC_REMOVE and archive.exists(failed.ref)
        (status.archived_since if done else status.retrying).append(failed)
    gone = books.gone.all()
    status.gone_count, status.gone = len(gone), gone[:GONE_LISTED]
    status.claims = sum(1 for _ in books.claims.all())
    progress = books.progress
    point = progress.point()
    status.catchup_point = point.point if point is not None else None
    status.catchup_skipped = [
        {"from": int(r.name.split(":", 1)[1]), "to": r.point, "note": r.note}
        for r in progress.skipped()
    ]
    return status


def dead_letters(archive: Archive) -> list[FailedEvent]:
    """The dead letters, the oldest failure first."""
    return archive.sync_records.failures.dead_letters()


def retry_dead_letters(
    archive: Archive, client: WorkflowClient, keys: list[str] | None = None
) -> list[FailedEvent]:
    """Put each dead letter (all, or those whose event id or snapshot id is in ``keys``)
    back into the workflow's event log as a new event, then forget it. A crash between
    the two leaves the letter; retrying it again only queues the snapshot twice."""
    book = archive.sync_records.failures
    letters = book.dead_letters()
    if keys is not None:
        wanted = set(keys)
        letters = [f for f in letters if f.event_id in wanted or f.ref in wanted]
    for letter in letters:
        client.put_event(letter.topic, letter.ref)
        book.clear(letter.event_id)
    return letters
