"""The sync: pull every snapshot from Imixs-Workflow's event log and archive it, losing none.

Each round, as the Java service does (reference section 4): release locks older than
``WORKFLOW_SYNC_DEADLOCK``; read up to ``WORKFLOW_SYNC_BATCH`` events of
``snapshot.add~snapshot.remove``; for each, on a pool of ``WORKFLOW_SYNC_WORKERS``
threads: lock it (409: another archive instance has it, skip), archive the snapshot
(stream ``GET /documents/{ref}`` into ``Archive.ingest``) or, for ``snapshot.remove``,
delete it with its unused files; emit ``snapshot.backup`` (and ``.<mirror>``) events when
``BACKUP_SERVICE_ENDPOINT`` is set; delete the event only after all that is complete.

What the Java service got wrong is fixed (section 9): a failed event is never deleted
but unlocked and retried with a growing delay; after ``WORKFLOW_SYNC_MAXATTEMPTS`` it goes
to the dead-letter list (``services/sync_failures.py``); ``snapshot.remove`` is acted on.
A workflow that is down, answers 5xx, or a store that is unavailable pauses the loop
with backoff; nothing is counted against an event then, and the loop resumes by itself.

Crash safety: every archive write is idempotent and the event is deleted last, so a
process killed at any point leaves an event that is (after its lock is released by
age) simply processed again. Backup events are emitted before the event is deleted: at
least once, never lost (the backup service is idempotent too).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, DocumentError, NotFoundError, StoreError
from imixs_archive.services.sync_failures import FailedEvent, FailureBook, now_ms
from imixs_archive.services.sync_status import forget_stale_instances
from imixs_archive.storage.model import ARCHIVE_SYNC_INSTANCES
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowUnavailableError
from imixs_archive.workflow.events import SYNC_TOPICS, TOPIC_REMOVE, Event, backup_topics

log = logging.getLogger("imixs_archive.sync")


@dataclass(frozen=True)
class SyncConfig:
    """How the loop runs (times in ms, as the Java settings); the defaults are those of
    the settings registry."""

    interval_ms: int = Settings.workflow_sync_interval
    initial_delay_ms: int = Settings.workflow_sync_initialdelay
    deadlock_ms: int = Settings.workflow_sync_deadlock
    workers: int = Settings.workflow_sync_workers
    max_attempts: int = Settings.workflow_sync_maxattempts
    retry_delay_ms: int = Settings.workflow_sync_retrydelay
    batch: int = Settings.workflow_sync_batch
    backup_endpoint: str = ""
    backup_mirrors: tuple[str, ...] = ()
    pause_max_ms: int = 60000
    """Longest pause while the workflow or the store is unavailable."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SyncConfig:
        mirrors = settings.backup_mirrors.replace(";", ",").split(",")
        return cls(
            interval_ms=settings.workflow_sync_interval,
            initial_delay_ms=settings.workflow_sync_initialdelay,
            deadlock_ms=settings.workflow_sync_deadlock,
            workers=max(1, settings.workflow_sync_workers),
            max_attempts=max(1, settings.workflow_sync_maxattempts),
            retry_delay_ms=max(0, settings.workflow_sync_retrydelay),
            batch=max(1, settings.workflow_sync_batch),
            backup_endpoint=settings.backup_service_endpoint.strip(),
            backup_mirrors=tuple(m.strip() for m in mirrors if m.strip()),
        )


class Outcome(StrEnum):
    """What happened to one event in a round."""

    DONE = "done"  # archived (or removed) and the event deleted
    BUSY = "busy"  # another archive instance holds its lock
    DEFERRED = "deferred"  # failed before; its next attempt is not due yet
    FAILED = "failed"  # failed; unlocked for a later attempt
    DEAD = "dead"  # failed for the last time: now a dead letter
    PAUSED = "paused"  # the workflow or the store is unavailable: nothing counted
    SKIPPED = "skipped"  # a stop was requested, or an earlier event of its snapshot is not done


COUNTERS = ("events", "archived", "removed", "bytes", "failures", "retries", "dead_letters")


@dataclass
class SyncCounters:
    """Counters of one sync process since it started (the metrics endpoint reads them)."""

    events: int = 0
    archived: int = 0
    removed: int = 0
    bytes: int = 0
    failures: int = 0
    retries: int = 0
    dead_letters: int = 0
    lag_ms: int = 0
    """Age of the oldest event pending in the workflow's log at the last round."""
    state: str = "starting"
    started: int = field(default_factory=now_ms)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def as_dict(self) -> dict[str, int | str]:
        with self._lock:
            values: dict[str, int | str] = {name: getattr(self, name) for name in COUNTERS}
            values.update(lag_ms=self.lag_ms, state=self.state, started=self.started)
            return values


@dataclass
class RoundResult:
    read: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    pause: str = ""
    """Why the loop should pause (empty: it need not)."""

    def count(self, outcome: Outcome) -> int:
        return self.outcomes[outcome]


_Work = tuple[Event, FailedEvent | None]


class _Pause(Exception):
    """Inside a worker: stop this event without counting it against the event."""


def instance_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class SyncService:
    """The sync loop over one archive and one workflow. ``run()`` in the foreground, or
    ``start()``/``stop()`` in a background thread (``imixs-archive serve``)."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        config: SyncConfig | None = None,
        *,
        instance: str | None = None,
    ) -> None:
        self.archive = archive
        self.client = client
        self.config = config or SyncConfig()
        self.instance = instance or instance_name()
        self.counters = SyncCounters()
        self.failures = FailureBook(archive.backend)
        self.stopping = threading.Event()
        self._pool = ThreadPoolExecutor(self.config.workers, thread_name_prefix="sync")
        self._thread: threading.Thread | None = None

    # ---- the loop ---------------------------------------------------------------------

    def run(self, *, initial_delay: bool = True, rounds: int | None = None) -> None:
        """Run rounds until :meth:`stop` (or ``rounds`` rounds). Never raises for an
        unavailable workflow or store: it pauses with backoff and tries again."""
        config = self.config
        with contextlib.suppress(StoreError):
            forget_stale_instances(self.archive.backend)
        if initial_delay and self.stopping.wait(config.initial_delay_ms / 1000):
            return
        pauses = 0
        done = 0
        while not self.stopping.is_set():
            result = self.run_round()
            done += 1
            if result.pause:
                pauses += 1
                wait = min(config.interval_ms * 2 ** min(pauses - 1, 16), config.pause_max_ms)
                self._set_state(f"paused: {result.pause}")
                log.warning("sync paused %.1f s: %s", wait / 1000, result.pause)
            else:
                pauses = 0
                fresh = result.read - result.count(Outcome.DEFERRED)
                more = result.count(Outcome.DONE) > 0 and fresh >= config.batch
                wait = 0 if more else config.interval_ms
                self._set_state("running")
            self.save_counters()
            if rounds is not None and done >= rounds:
                break
            if wait:
                self.stopping.wait(max(wait, 1) / 1000)
        self._set_state("stopped")
        self.save_counters()

    def run_round(self) -> RoundResult:
        """One round: release stale locks, read events, process them concurrently."""
        result = RoundResult()
        try:
            known = {failed.event_id: failed for failed in self.failures.all()}
            # Events waiting for their next attempt are read too, but must not hide the
            # batch of new ones behind them.
            waiting = sum(1 for failed in known.values() if not failed.dead)
            self.client.release_events(self.config.deadlock_ms, SYNC_TOPICS)
            events = self.client.read_events(
                SYNC_TOPICS, self.config.batch + min(waiting, 10 * self.config.batch)
            )
        except (ArchiveError, OSError) as exc:
            result.pause = str(exc)
            return result
        result.read = len(events)
        self._set_lag(events)
        at = now_ms()
        work = [(event, known.get(event.id)) for event in events]
        futures = [self._pool.submit(self._in_order, group, at) for group in _spread(work)]
        for future in futures:
            for outcome, reason in future.result():
                result.outcomes[outcome] += 1
                if outcome is Outcome.PAUSED and not result.pause:
                    result.pause = reason
        return result

    def stop(self) -> None:
        """Ask the loop to stop once the events in hand are done."""
        self.stopping.set()

    def start(self) -> threading.Thread:
        """Run the loop in a background thread (for ``serve``)."""
        thread = threading.Thread(target=self.run, name="sync-loop", daemon=True)
        self._thread = thread
        thread.start()
        return thread

    def close(self, timeout: float | None = None) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=True)

    # ---- one event --------------------------------------------------------------------

    def _in_order(self, group: list[_Work], at: int) -> list[tuple[Outcome, str]]:
        """The events of one snapshot, in the log's order. Adds followed by a remove are
        superseded, even while waiting for a retry: only their events are deleted (the
        snapshot is gone from the workflow; archiving it would only have it deleted again).
        Once an event is neither done nor a dead letter, the later ones wait for the next
        round."""
        removes = [n for n, (event, _) in enumerate(group) if event.base_topic == TOPIC_REMOVE]
        superseded = removes[-1] if removes else 0
        outcomes: list[tuple[Outcome, str]] = []
        for index, (event, failed) in enumerate(group):
            if outcomes and outcomes[-1][0] not in (Outcome.DONE, Outcome.DEAD):
                outcomes.append((Outcome.SKIPPED, ""))
            elif index < superseded and event.base_topic != TOPIC_REMOVE:
                outcomes.append(self._guarded(event, failed, superseded=True))
            elif failed is not None and not failed.dead and not failed.due(at):
                outcomes.append((Outcome.DEFERRED, ""))
            else:
                outcomes.append(self._guarded(event, failed))
        return outcomes

    def _guarded(
        self, event: Event, failed: FailedEvent | None, *, superseded: bool = False
    ) -> tuple[Outcome, str]:
        try:
            return self._process(event, failed, superseded), ""
        except _Pause as pause:
            return Outcome.PAUSED, str(pause)
        except Exception as exc:  # a bug: the event stays in the log, the loop pauses
            log.exception("event %s (%s): unexpected error", event.id, event.ref)
            return Outcome.PAUSED, f"unexpected {type(exc).__name__}: {exc}"

    def _process(self, event: Event, failed: FailedEvent | None, superseded: bool) -> Outcome:
        if self.stopping.is_set():
            return Outcome.SKIPPED
        try:
            if not self.client.lock_event(event.id):
                return Outcome.BUSY
        except ArchiveError as exc:
            raise _Pause(str(exc)) from exc
        if failed is not None and failed.dead:
            # Recorded as dead by a process that died before deleting the event.
            self._after_write(event, lambda: self.client.delete_event(event.id))
            return Outcome.DEAD
        if superseded:
            self._after_write(event, lambda: self._finish(event, failed, backup=False))
            self.counters.add(events=1)
            return Outcome.DONE
        if failed is not None:
            self.counters.add(retries=1)
        try:
            sizes = self._archive(event)
        except StoreError as exc:
            self._unlock(event)
            raise _Pause(f"store: {exc}") from exc
        except WorkflowUnavailableError as exc:
            if exc.down:
                self._unlock(event)
                raise _Pause(str(exc)) from exc
            return self._failed(event, exc)
        except Exception as exc:  # any other reason: counted, retried, never dropped
            return self._failed(event, exc)
        self._after_write(event, lambda: self._finish(event, failed))
        self.counters.add(events=1, **sizes)
        return Outcome.DONE

    def _archive(self, event: Event) -> dict[str, int]:
        """The archive write for one event; the counters it adds."""
        ref = event.ref
        if event.base_topic == TOPIC_REMOVE:
            self.archive.delete(ref)
            return {"removed": 1}
        received = [0]
        try:
            with self.client.stream_document(ref) as blocks:
                results = list(self.archive.ingest(_counted(blocks, received), name=ref))
        except NotFoundError:
            if self.archive.exists(ref):
                return {}  # already archived; the workflow no longer holds it
            raise
        stored: StoreResult | None = None
        for outcome in results:
            if not isinstance(outcome, StoreResult):
                raise outcome[1]
            if outcome.snapshot_id == ref:
                stored = outcome
        if stored is None:
            raise DocumentError(f"the workflow's answer for {ref} holds no snapshot {ref}")
        return {"archived": 1, "bytes": received[0]}

    def _finish(self, event: Event, failed: FailedEvent | None, *, backup: bool = True) -> None:
        """After the archive write: backup events, forget the failure, delete the event."""
        if backup and self.config.backup_endpoint and event.base_topic != TOPIC_REMOVE:
            doc = self.archive.load(event.ref, with_files=False)
            if not doc.get_first("$backuprestore"):
                for topic in backup_topics(self.config.backup_mirrors):
                    self.client.put_event(topic, event.ref)
        if failed is not None:
            self.failures.clear(event.id)
        self.client.delete_event(event.id)

    def _after_write(self, event: Event, step: Callable[[], None]) -> None:
        """Run a step that follows a complete archive write. Should it fail, the event
        stays (locked until released by age) and is simply done again: no attempt is
        counted, since the snapshot itself is safe."""
        try:
            step()
        except (ArchiveError, OSError) as exc:
            self._unlock(event)
            raise _Pause(str(exc)) from exc

    def _failed(self, event: Event, exc: BaseException) -> Outcome:
        error = f"{type(exc).__name__}: {exc}"
        self.counters.add(failures=1)
        try:
            failed = self.failures.record(
                event.id,
                event.base_topic,
                event.ref,
                error,
                max_attempts=self.config.max_attempts,
                base_delay_ms=self.config.retry_delay_ms,
            )
        except StoreError as store_exc:
            self._unlock(event)
            raise _Pause(f"store: {store_exc}") from store_exc
        if failed.dead:
            self.counters.add(dead_letters=1)
            log.error(
                "dead letter: %s %s after %d attempts: %s",
                failed.topic,
                failed.ref,
                failed.attempts,
                error,
            )
            with contextlib.suppress(ArchiveError):
                self.client.delete_event(event.id)
            return Outcome.DEAD
        log.warning(
            "event %s (%s) failed, attempt %d: %s", event.id, event.ref, failed.attempts, error
        )
        self._unlock(event)
        return Outcome.FAILED

    def _unlock(self, event: Event) -> None:
        # Tried twice; should both fail, the lock is released by age (WORKFLOW_SYNC_DEADLOCK).
        for _ in range(2):
            try:
                self.client.unlock_event(event.id)
                return
            except ArchiveError:
                continue

    # ---- counters -----------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        with self.counters._lock:
            self.counters.state = state[:500]

    def _set_lag(self, events: list[Event]) -> None:
        created = [e.created for e in events if e.created is not None]
        lag = 0
        if created:
            lag = int((dt.datetime.now(dt.UTC) - min(created)).total_seconds() * 1000)
        with self.counters._lock:
            self.counters.lag_ms = max(lag, 0)

    def save_counters(self) -> None:
        values = self.counters.as_dict()
        row = {"instance": self.instance, "updated": now_ms(), **values}
        try:
            self.archive.backend.put(ARCHIVE_SYNC_INSTANCES, [row])
        except StoreError as exc:
            log.warning("could not save the sync counters: %s", exc)


def _spread(work: list[_Work]) -> list[list[_Work]]:
    """The round's events grouped by the snapshot they name (log order kept inside a
    group), the groups starting at a random one. Archive instances sharing a workflow all
    read the same oldest events; starting at different points, they seldom ask for the
    same lock (each 409 is a wasted request), where in log order they collided on almost
    every event."""
    groups: dict[str, list[_Work]] = {}
    for item in work:
        groups.setdefault(item[0].ref, []).append(item)
    ordered = list(groups.values())
    start = random.randrange(len(ordered)) if ordered else 0
    return ordered[start:] + ordered[:start]


def _counted(blocks: Iterator[bytes], total: list[int]) -> Iterator[bytes]:
    for block in blocks:
        total[0] += len(block)
        yield block
