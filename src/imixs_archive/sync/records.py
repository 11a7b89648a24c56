"""The sync's own records in the archive: claims, failures, snapshots gone, catch-up
progress, each process's counters.

The workflow's event log cannot be trusted to keep an event until it is done (its
``release`` deletes every locked entry, also the ones another process holds), so the sync
keeps its own record of what it took and how far it has checked the workflow's snapshots
(``docs/sync.md``). Every write here is a single-row upsert or delete: several sync
processes write at once without reading each other's rows first.

* :class:`ClaimBook` (``archive_sync_claims``): an event taken by a process, written before
  the process works on it and deleted once the event is done; of two processes that took
  one event at once, the one whose claim stands goes on (the workflow's lock tells no one
  apart). A claim that stays (its process
  was killed, or the event vanished) is finished by any process from its ref.
* :class:`FailureBook` (``archive_sync_failures``): events whose archiving failed, to be
  tried again or dead letters (the rules: ``sync/failures.py``). Only the process
  whose claim on the event stands writes its row.
* :class:`GoneBook` (``archive_sync_gone``): snapshots the workflow answered 404 for: final.
* :class:`ProgressBook` (``archive_sync_progress``): the catch-up point and the ranges the
  catch-up could not read.
* :class:`InstanceBook` (``archive_sync_instances``): each sync process's counters, a row
  per process written after every round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_SYNC_CLAIMS,
    ARCHIVE_SYNC_FAILURES,
    ARCHIVE_SYNC_GONE,
    ARCHIVE_SYNC_INSTANCES,
    ARCHIVE_SYNC_PROGRESS,
    Table,
)
from imixs_archive.timezones import now_ms

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")

CATCHUP = "catchup"
SKIPPED = "skipped:"
RESYNC_STOP = "resync-stop"


class RowBook(Generic[R]):
    """One table of the sync's, a row per key, each row read as a record (``kind``: a
    dataclass of the table's columns)."""

    def __init__(self, backend: Backend, table: Table, kind: Callable[..., R]) -> None:
        self.backend = backend
        self._table = table
        self._kind = kind

    def get(self, key: str) -> R | None:
        """The record of one key (the table's partition key), or None."""
        row = self.backend.get(self._table, {self._table.partition_key[0]: key})
        return self._kind(**row) if row is not None else None

    def _records(self) -> Iterator[R]:
        for row in self.backend.scan(self._table):
            yield self._kind(**row)

    def _put(self, *records: R) -> None:
        self.backend.put(self._table, [asdict(r) for r in records])

    def _delete(self, key: str) -> None:
        self.backend.delete(self._table, {self._table.partition_key[0]: key})


@dataclass(frozen=True)
class Claim:
    event_id: str
    topic: str
    ref: str
    instance: str
    claimed: int


class ClaimBook(RowBook[Claim]):
    """Events taken by sync processes and not done yet."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_SYNC_CLAIMS, Claim)

    def take(self, claims: Iterable[tuple[str, str, str]], instance: str) -> None:
        """Record (event id, topic, ref) triples as taken by ``instance`` now."""
        at = now_ms()
        taken = [Claim(event_id, topic, ref, instance, at) for event_id, topic, ref in claims]
        if taken:
            with self.backend.grouped():
                self._put(*taken)

    def done(self, event_ids: Iterable[str]) -> None:
        """Forget these claims (their events are done), in one write where the store can."""
        with self.backend.grouped():
            for event_id in event_ids:
                self._delete(event_id)

    def all(self) -> Iterator[Claim]:
        return self._records()


RETRY = "retry"
DEAD = "dead"


@dataclass
class FailedEvent:
    """An event whose archiving failed: ``retry`` (not before ``next_attempt``, epoch ms)
    or ``dead`` (a dead letter: kept to be put into the workflow's log again)."""

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


class FailureBook(RowBook[FailedEvent]):
    """The failed events of one archive, a row per event id."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_SYNC_FAILURES, FailedEvent)

    def all(self) -> Iterator[FailedEvent]:
        return self._records()

    def dead_letters(self) -> list[FailedEvent]:
        """The dead letters, the oldest failure first."""
        return sorted((f for f in self.all() if f.dead), key=lambda f: f.last_failed)

    def save(self, failed: FailedEvent) -> None:
        self._put(failed)

    def clear(self, event_id: str) -> None:
        self._delete(event_id)


@dataclass(frozen=True)
class Gone:
    ref: str
    event_id: str
    topic: str
    gone_at: int
    instance: str


class GoneBook(RowBook[Gone]):
    """Snapshots the workflow no longer held when their event was handled."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_SYNC_GONE, Gone)

    def record(self, ref: str, event_id: str, topic: str, instance: str) -> Gone:
        gone = Gone(ref, event_id, topic, now_ms(), instance)
        self._put(gone)
        return gone

    def all(self) -> list[Gone]:
        """Every one recorded, the latest first."""
        return sorted(self._records(), key=lambda g: g.gone_at, reverse=True)


@dataclass(frozen=True)
class Progress:
    name: str
    point: int
    updated: int
    owner: str
    note: str


class ProgressBook(RowBook[Progress]):
    """The catch-up's point (``catchup``) and the ranges it skipped (``skipped:<from>``)."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_SYNC_PROGRESS, Progress)

    def point(self) -> Progress | None:
        return self.get(CATCHUP)

    def advance(self, point: int, owner: str) -> int:
        """Move the point to ``point`` unless another process has moved it further
        (then that point is returned: a race between two walks only walks again)."""
        known = self.point()
        if known is not None and known.point > point:
            return known.point
        self._put(Progress(CATCHUP, point, now_ms(), owner, ""))
        return point

    def skip(self, first: int, last: int, owner: str, note: str) -> None:
        """Record that snapshots with ``$modified`` in ``[first, last]`` could not be read
        from the syncpoint feed."""
        self._put(Progress(f"{SKIPPED}{first}", last, now_ms(), owner, note))

    def skipped(self) -> list[Progress]:
        skips = (r for r in self._records() if r.name.startswith(SKIPPED))
        return sorted(skips, key=lambda r: r.point)

    # A stop asked of a running resync: a row of its own, written only by whoever asks,
    # so that the walk's saves of the state document (a read-modify-write of one row)
    # can never overwrite it, as they could an item in that document.

    def ask_resync_stop(self, owner: str) -> None:
        self._put(Progress(RESYNC_STOP, now_ms(), now_ms(), owner, ""))

    def resync_stop_asked(self) -> bool:
        return self.get(RESYNC_STOP) is not None

    def clear_resync_stop(self) -> None:
        self._delete(RESYNC_STOP)


@dataclass(kw_only=True)
class SyncTotals:
    """What a sync process counts, declared once: kept in memory by the process
    (``sync/counters.py``), saved per process (``SyncInstance``), shown everywhere."""

    events: int = 0
    archived: int = 0
    removed: int = 0
    bytes: int = 0
    failures: int = 0
    retries: int = 0
    dead_letters: int = 0


TOTALS = tuple(f.name for f in fields(SyncTotals))


@dataclass(kw_only=True)
class SyncInstance(SyncTotals):
    """One sync process's counters since it started (times in epoch ms), as saved."""

    instance: str
    started: int = 0
    updated: int = 0
    state: str = ""
    lag_ms: int = 0

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> SyncInstance:
        """From a process's counters (names beyond these columns are left out; a value
        not there is 0, or empty for ``state``)."""
        kept: dict[str, Any] = {f.name: values.get(f.name) for f in fields(cls)}
        for name, value in kept.items():
            if value is None:
                kept[name] = "" if name in ("instance", "state") else 0
        return cls(**kept)


class InstanceBook(RowBook[SyncInstance]):
    """Each sync process's counters (``archive_sync_instances``), a row per process."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, ARCHIVE_SYNC_INSTANCES, lambda **row: SyncInstance.of(row))

    def save(self, counters: SyncInstance) -> None:
        self._put(counters)

    def all(self) -> list[SyncInstance]:
        """Every process's counters, by instance name."""
        return sorted(self._records(), key=lambda i: i.instance)

    def forget(self, instance: str) -> None:
        self._delete(instance)


class SyncRecords:
    """The sync's books of one archive (``Archive.sync_records``)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.claims = ClaimBook(backend)
        self.failures = FailureBook(backend)
        self.gone = GoneBook(backend)
        self.progress = ProgressBook(backend)
        self.instances = InstanceBook(backend)

    def adopt(self, other: SyncRecords) -> int:
        """Copy the records of another archive that say what its sync knows (an archive
        copied, ``recovery/export.py``): failed events and dead letters, snapshots gone,
        the catch-up point and the ranges it skipped; a row this archive already has (the
        same key) is kept as it is. Claims and process counters belong to running
        processes and are not copied. The number of rows copied."""
        copied = 0
        for table, key in (
            (ARCHIVE_SYNC_FAILURES, "event_id"),
            (ARCHIVE_SYNC_GONE, "ref"),
            (ARCHIVE_SYNC_PROGRESS, "name"),
        ):
            for row in other.backend.scan(table):
                if row[key] == RESYNC_STOP:
                    continue  # a request to a process of the other archive
                if self.backend.get(table, {key: row[key]}, [key]) is None:
                    self.backend.put(table, [dict(row)])
                    copied += 1
        return copied
