"""The sync: pull every snapshot from Imixs-Workflow and archive it, losing none.

The workflow's event log is the fast path, but it does not keep an event for whoever
holds it: its ``lock`` is not exclusive (a second lock answers 200 too) and its
``release`` deletes every locked event, whatever its age (``docs/sync.md``). So:

* Each round reads up to ``WORKFLOW_SYNC_BATCH`` events of ``snapshot.add~snapshot.remove``
  and **claims** them in the archive (``archive_sync_claims``); events another live process
  claimed are left to it. On a pool of ``WORKFLOW_SYNC_WORKERS`` threads each is done:
  archive the snapshot unless the archive has it (stream ``GET /documents/{ref}`` into
  ``Archive.ingest``), emit ``snapshot.backup`` events when ``BACKUP_SERVICE_ENDPOINT`` is
  set, delete the event, drop the claim. Events are not locked: the workflow's lock keeps
  no one apart, and a locked event is what ``release`` deletes.
* A claim older than ``WORKFLOW_SYNC_DEADLOCK`` (its process was killed, or the event was
  released away under it) is finished by any process from its ref.
* A snapshot the workflow answers 404 for is **gone**: recorded (``archive_sync_gone``),
  the event removed, never retried.
* ``snapshot.remove`` deletes the archived snapshot only with ``WORKFLOW_SYNC_REMOVE``;
  otherwise the event is removed and logged.
* The **catch-up** (``sync/catchup.py``) walks ``/snapshot/syncpoint`` behind the log
  and archives whatever no event brought (a Java archive beside consumes events too).

A failed event is never dropped: it is retried with a growing delay, and after
``WORKFLOW_SYNC_MAXATTEMPTS`` it goes to the dead-letter list (``sync/failures.py``). A
workflow that is down, or a store that is unavailable, pauses the loop with backoff.
The service never calls ``release`` unless ``WORKFLOW_SYNC_RELEASE`` asks for it.

Crash safety: every archive write is idempotent; the claim is written before any work
and dropped after the event is deleted, so a process killed at any point leaves a claim
(or an event) that is simply done again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import os
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.config import Settings
from imixs_archive.errors import (
    ArchiveError,
    DocumentError,
    LegalHoldError,
    NotFoundError,
    StoreError,
)
from imixs_archive.sync.catchup import CatchUp, InFlight
from imixs_archive.sync.counters import (
    FIRST,
    NEXT,
    PAUSE,
    SyncCounters,
    next_round,
    round_report,
    seconds,
)
from imixs_archive.sync.failures import record_failure
from imixs_archive.sync.records import Claim, FailedEvent
from imixs_archive.sync.status import forget_stale_instances
from imixs_archive.timezones import now_ms
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
    release: bool = Settings.workflow_sync_release
    remove: bool = Settings.workflow_sync_remove
    catchup: bool = Settings.workflow_sync_catchup
    catchup_lag_ms: int = Settings.workflow_sync_catchup_lag
    catchup_from: int | None = None
    """Where the catch-up starts when the archive has no point yet (None: now - lag)."""
    catchup_budget_ms: int = 1000
    """Longest time one round spends on the catch-up."""
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
            release=settings.workflow_sync_release,
            remove=settings.workflow_sync_remove,
            catchup=settings.workflow_sync_catchup,
            catchup_lag_ms=max(0, settings.workflow_sync_catchup_lag),
        )


class Outcome(StrEnum):
    """What happened to one event in a round."""

    DONE = "done"  # archived (or removed) and the event deleted
    GONE = "gone"  # the workflow no longer holds the snapshot (404): recorded, final
    BUSY = "busy"  # another sync process has claimed it
    DEFERRED = "deferred"  # failed before; its next attempt is not due yet
    FAILED = "failed"  # failed; recorded, taken again when its next attempt is due
    DEAD = "dead"  # failed for the last time: now a dead letter
    PAUSED = "paused"  # the workflow or the store is unavailable: nothing counted
    SKIPPED = "skipped"  # a stop was requested, or an earlier event of its snapshot is not done


@dataclass
class RoundResult:
    read: int = 0
    taken_over: int = 0
    """Claims of other (dead) processes finished in this round."""
    catching_up: bool = False
    """The catch-up stopped at its time budget with more to walk."""
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    pause: str = ""
    """Why the loop should pause (empty: it need not)."""
    left: int = 0
    """Events read that are still in the workflow's event log after the round."""
    more: bool = False
    """The read got as many events as it asked for: the log may hold more."""

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
        self.failures = archive.sync_records.failures
        self.claims = archive.sync_records.claims
        self.gone = archive.sync_records.gone
        self.stopping = threading.Event()
        self._in_flight = InFlight()
        """Refs the workers or the catch-up are downloading now."""
        self.catchup = CatchUp(
            archive,
            client,
            lag_ms=self.config.catchup_lag_ms,
            instance=self.instance,
            start=self.config.catchup_from,
            stopping=self.stopping,
            in_flight=self._in_flight,
        )
        self._pool = ThreadPoolExecutor(self.config.workers, thread_name_prefix="sync")
        self._thread: threading.Thread | None = None
        self._finished: list[str] = []
        self._finished_lock = threading.Lock()
        self._walker: threading.Thread | None = None

    # ---- the loop ---------------------------------------------------------------------

    def run(self, *, initial_delay: bool = True, rounds: int | None = None) -> None:
        """Run rounds until :meth:`stop` (or ``rounds`` rounds). Never raises for an
        unavailable workflow or store: it pauses with backoff and tries again."""
        config = self.config
        with contextlib.suppress(StoreError):
            forget_stale_instances(self.archive)
        if initial_delay and config.initial_delay_ms > 0:
            log.info(
                "first round in %s (WORKFLOW_SYNC_INITIALDELAY); events pending are read then",
                seconds(config.initial_delay_ms),
            )
            self.save_counters()
            self.counters.wait(FIRST, config.initial_delay_ms)
            if self.stopping.wait(config.initial_delay_ms / 1000):
                self._stopped()
                return
        self.counters.wait(FIRST, 0)
        if config.catchup:
            # Its own thread: one request at a time, its waits overlap the workers'.
            self._walker = threading.Thread(target=self._walk, name="sync-catchup", daemon=True)
            self._walker.start()
        pauses = 0
        done = 0
        quiet: tuple[int, int] | None = None
        while not self.stopping.is_set():
            result = self.run_round()
            done += 1
            if result.pause:
                pauses += 1
                wait = min(config.interval_ms * 2 ** min(pauses - 1, 16), config.pause_max_ms)
                self.counters.wait(PAUSE, wait, f"paused: {result.pause}")
                log.warning("sync paused %.1f s: %s", wait / 1000, result.pause)
            else:
                pauses = 0
                fresh = result.read - result.count(Outcome.DEFERRED)
                more = result.count(Outcome.DONE) > 0 and fresh >= config.batch
                wait = 0 if more or result.catching_up else config.interval_ms
                self.counters.wait(NEXT, wait, "running")
                # a round that changed nothing is said once, not every interval
                idle = (result.read, result.left) if _idle(result) else None
                if idle is None or idle != quiet:
                    report = round_report(
                        result.read, result.outcomes.items(), result.left, result.more
                    )
                    log.info("%s", f"{report}; {next_round(wait)}")
                quiet = idle
            self.save_counters()
            if rounds is not None and done >= rounds:
                break
            if wait:
                self.stopping.wait(max(wait, 1) / 1000)
            self.counters.wait(NEXT, 0)
        if self._walker is not None:
            self._walker.join()
        self._stopped()

    def once(self) -> RoundResult:
        """One round and no more (``sync --once``). Its outcome is saved as the process's
        state, so the Monitor and ``sync --status`` show a finished round, not a process
        still "starting"."""
        result = self.run_round()
        self.counters.wait("", 0, once_state(result))
        self.save_counters()
        return result

    def _stopped(self) -> None:
        self.counters.wait("", 0, "stopped")
        self.save_counters()

    def _walk(self) -> None:
        """The catch-up beside the rounds, until stopped; pauses with backoff."""
        config, pauses = self.config, 0
        while not self.stopping.is_set():
            result = RoundResult()
            self._catch_up(result)
            if result.pause:
                pauses += 1
                log.warning("catch-up paused: %s", result.pause)
                wait = min(config.interval_ms * 2 ** min(pauses - 1, 16), config.pause_max_ms)
            else:
                pauses = 0
                wait = 0 if result.catching_up else config.interval_ms
            if wait:
                self.stopping.wait(wait / 1000)

    def run_round(self) -> RoundResult:
        """One round: read events, claim them, process them and the claims other
        processes left behind concurrently, then walk the catch-up for a while."""
        result = RoundResult()
        try:
            known = {failed.event_id: failed for failed in self.failures.all()}
            claims = {claim.event_id: claim for claim in self.claims.all()}
            at = now_ms()
            fresh = at - self.config.deadlock_ms
            others = sum(1 for c in claims.values() if c.instance != self.instance)
            # Events waiting for their next attempt, or in other processes' hands, are
            # read too, but must not hide the batch of new ones behind them.
            waiting = sum(1 for failed in known.values() if not failed.dead) + others
            if self.config.release:
                self.client.release_events(self.config.deadlock_ms, SYNC_TOPICS)
            limit = self.config.batch + min(waiting, 10 * self.config.batch)
            events = self.client.read_events(SYNC_TOPICS, limit)
            # Another live process has these.
            busy = {
                event.id
                for event in events
                if (claim := claims.get(event.id)) is not None
                and claim.instance != self.instance
                and claim.claimed > fresh
            }
            work = [
                (event, self._settled(event, known.get(event.id), at))
                for event in events
                if event.id not in busy
            ]
            orphans = self._orphans(claims.values(), {event.id for event in events}, known)
            self.claims.take(
                [
                    (event.id, event.base_topic, event.ref)
                    for event, failed in work + orphans
                    if failed is None or failed.dead or failed.due(at)
                ],
                self.instance,
            )
        except (ArchiveError, OSError) as exc:
            result.pause = str(exc)
            return result
        result.read = len(events)
        result.outcomes[Outcome.BUSY] += len(busy)
        result.taken_over = len(orphans)
        self._set_lag(events)
        futures = [
            self._pool.submit(self._in_order, group, at) for group in _spread(work + orphans)
        ]
        for future in futures:
            for outcome, reason in future.result():
                result.outcomes[outcome] += 1
                if outcome is Outcome.PAUSED and not result.pause:
                    result.pause = reason
        finished = set(self._drop_claims(result))
        result.left = sum(1 for event in events if event.id not in finished)
        result.more = len(events) >= limit
        self.counters.round_done(result.left, result.more)
        if not result.pause and self.config.catchup and self._walker is None:
            self._catch_up(result)
        return result

    def _settled(self, event: Event, failed: FailedEvent | None, at: int) -> FailedEvent | None:
        """A failed event waiting for its next attempt whose snapshot was archived since (by
        another event, the catch-up, an import) is due now: done at once, its failure
        forgotten, rather than shown as retrying until its time comes."""
        if (
            failed is None
            or failed.dead
            or failed.due(at)
            or event.base_topic == TOPIC_REMOVE
            or not self.archive.exists(event.ref)
        ):
            return failed
        return dataclasses.replace(failed, next_attempt=at)

    def _drop_claims(self, result: RoundResult) -> list[str]:
        """Drop the claims of the events deleted from the log in this round; their ids."""
        with self._finished_lock:
            finished, self._finished = self._finished, []
        try:
            self.claims.done(finished)
        except StoreError as exc:
            result.pause = result.pause or f"store: {exc}"
        return finished

    def _orphans(
        self, claims: Iterable[Claim], seen: set[str], known: dict[str, FailedEvent]
    ) -> list[_Work]:
        """Claims left longer than the deadlock time whose event this round did not read:
        their process died, or the workflow's release deleted the event."""
        limit = now_ms() - self.config.deadlock_ms
        stale = sorted(
            (c for c in claims if c.claimed <= limit and c.event_id not in seen),
            key=lambda c: c.claimed,
        )
        return [
            (Event(c.event_id, c.topic, c.ref), known.get(c.event_id))
            for c in stale[: self.config.batch]
        ]

    def _catch_up(self, result: RoundResult) -> None:
        try:
            walked = self.catchup.run(self.config.catchup_budget_ms / 1000)
        except (ArchiveError, OSError) as exc:
            result.pause = f"catch-up: {exc}"
            return
        except Exception as exc:  # a bug: logged; the walk pauses and goes on (its thread
            log.exception("catch-up: unexpected error")  # ended here, the catch-up with it)
            result.pause = f"catch-up: unexpected {type(exc).__name__}: {exc}"
            return
        result.catching_up = walked.more
        self.counters.add(caught_up=walked.new)
        with self.counters._lock:
            self.counters.catchup_point = walked.point

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
        """The events of one snapshot, in the log's order. With ``remove``, adds
        followed by a remove are superseded, even while waiting for a retry: only their
        events are deleted (the snapshot is gone from the workflow; archiving it would
        only have it deleted again). Once an event is neither done nor a dead letter, the
        later ones wait for the next round."""
        removes = [n for n, (event, _) in enumerate(group) if event.base_topic == TOPIC_REMOVE]
        superseded = removes[-1] if removes and self.config.remove else 0
        outcomes: list[tuple[Outcome, str]] = []
        for index, (event, failed) in enumerate(group):
            if outcomes and outcomes[-1][0] not in (Outcome.DONE, Outcome.DEAD, Outcome.GONE):
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
        except Exception as exc:  # a bug: the event and its claim stay, the loop pauses
            log.exception("event %s (%s): unexpected error", event.id, event.ref)
            return Outcome.PAUSED, f"unexpected {type(exc).__name__}: {exc}"

    def _still_mine(self, event: Event) -> bool:
        """Has no other process claimed the event since this one did? Of two processes
        that took it at once, the one that wrote last goes on (the workflow's lock cannot
        tell them apart)."""
        try:
            claim = self.claims.get(event.id)
        except StoreError as exc:
            raise _Pause(f"store: {exc}") from exc
        return claim is None or claim.instance == self.instance

    def _process(self, event: Event, failed: FailedEvent | None, superseded: bool) -> Outcome:
        if self.stopping.is_set():
            return Outcome.SKIPPED
        if not self._still_mine(event):
            return Outcome.BUSY
        if failed is not None and failed.dead:
            # Recorded as dead by a process that died before deleting the event.
            self._after_write(event, lambda: self._drop(event))
            return Outcome.DEAD
        if superseded:
            self._after_write(event, lambda: self._finish(event, failed, backup=False))
            self.counters.add(events=1)
            return Outcome.DONE
        if failed is not None:
            self.counters.add(retries=1)
        try:
            sizes = self._archive(event)
        except _Busy:
            return Outcome.SKIPPED
        except _Gone:
            self._after_write(event, lambda: self._gone(event, failed))
            self.counters.add(events=1, gone=1)
            return Outcome.GONE
        except StoreError as exc:
            raise _Pause(f"store: {exc}") from exc
        except WorkflowUnavailableError as exc:
            if exc.down:
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
            if not self.config.remove:
                log.info("snapshot.remove %s: kept in the archive (WORKFLOW_SYNC_REMOVE off)", ref)
                return {}
            try:
                self.archive.delete(ref, reason="snapshot.remove", by="sync")
            except LegalHoldError as exc:  # the workflow may drop it; the archive keeps it
                log.warning("snapshot.remove %s: kept in the archive (%s)", ref, exc.why)
                return {}
            return {"removed": 1}
        if self.archive.exists(ref):  # by another process, the catch-up, or a retry ...
            self.archive.log_if_unlogged(ref)  # ... or by the Java service: logged as found
            return {}
        received = [0]
        if not self._in_flight.take([ref]):
            raise _Busy()  # the catch-up is downloading it: the event waits a round
        try:
            with self.client.stream_document(ref) as blocks:
                results = list(self.archive.ingest(_counted(blocks, received), name=ref))
        except NotFoundError:
            if self.archive.exists(ref):
                return {}
            raise _Gone() from None
        finally:
            self._in_flight.release([ref])
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
        """After the archive write: backup events, forget the failure, delete the event,
        drop the claim."""
        if backup and self.config.backup_endpoint and event.base_topic != TOPIC_REMOVE:
            doc = self.archive.load(event.ref, with_files=False)
            if "$backuprestore" not in doc:  # Java's hasItem: its presence, any value
                for topic in backup_topics(self.config.backup_mirrors):
                    self.client.put_event(topic, event.ref)
        if failed is not None:
            self.failures.clear(event.id)
        self._drop(event)

    def _drop(self, event: Event) -> None:
        """Delete the event; its claim goes at the end of the round, with the others in
        one write (should the process die before, the claims are finished again: the
        event is gone, the snapshot archived, nothing to do but delete them)."""
        self.client.delete_event(event.id)
        with self._finished_lock:
            self._finished.append(event.id)

    def _gone(self, event: Event, failed: FailedEvent | None) -> None:
        """The workflow deleted the snapshot (404): final, recorded, no retry."""
        self.gone.record(event.ref, event.id, event.base_topic, self.instance)
        log.info(
            "snapshot %s is gone from the workflow (404): event %s removed", event.ref, event.id
        )
        if failed is not None:
            self.failures.clear(event.id)
        self._drop(event)

    def _after_write(self, event: Event, step: Callable[[], None]) -> None:
        """Run a step that follows a complete archive write. Should it fail, the event
        (or its claim) stays and is simply done again: no attempt is counted, since the
        snapshot itself is safe."""
        try:
            step()
        except (ArchiveError, OSError) as exc:
            raise _Pause(str(exc)) from exc

    def _failed(self, event: Event, exc: BaseException) -> Outcome:
        error = f"{type(exc).__name__}: {exc}"
        self.counters.add(failures=1)
        try:
            failed = record_failure(
                self.failures,
                event.id,
                event.base_topic,
                event.ref,
                error,
                max_attempts=self.config.max_attempts,
                base_delay_ms=self.config.retry_delay_ms,
            )
        except StoreError as store_exc:
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
            with contextlib.suppress(ArchiveError, OSError):
                self._drop(event)
            return Outcome.DEAD
        log.warning(
            "event %s (%s) failed, attempt %d: %s", event.id, event.ref, failed.attempts, error
        )
        return Outcome.FAILED

    # ---- counters -----------------------------------------------------------------------

    def _set_lag(self, events: list[Event]) -> None:
        created = [e.created for e in events if e.created is not None]
        lag = 0
        if created:
            lag = int((dt.datetime.now(dt.UTC) - min(created)).total_seconds() * 1000)
        with self.counters._lock:
            self.counters.lag_ms = max(lag, 0)

    def save_counters(self) -> None:
        try:
            self.counters.save(self.archive.sync_records.instances, self.instance)
        except StoreError as exc:
            log.warning("could not save the sync counters: %s", exc)


ONCE_PREFIX = "finished one round"
"""The saved state of a one-shot round (``sync --once``) that ended; a paused one is saved
as ``paused: ...``, as the loop says it."""


def once_state(result: RoundResult) -> str:
    """A one-shot round's outcome as the process's saved state."""
    if result.pause:
        return f"paused: {result.pause}"
    report = round_report(result.read, result.outcomes.items(), result.left, result.more)
    return f"{ONCE_PREFIX}: {report.removeprefix('round: ')}"


class _Gone(Exception):
    """The workflow answered 404 for the snapshot."""


class _Busy(Exception):
    """The catch-up of this process is downloading the snapshot."""


def _idle(result: RoundResult) -> bool:
    """Did the round leave everything as it was (events only waiting or others')?"""
    waiting = (Outcome.DEFERRED, Outcome.BUSY)
    return not result.taken_over and all(o in waiting for o, n in result.outcomes.items() if n)


def _spread(work: list[_Work]) -> list[list[_Work]]:
    """The round's events grouped by the snapshot they name (log order kept inside a
    group), the groups starting at a random one. Archive instances sharing a workflow all
    read the same oldest events; starting at different points, they seldom take the same
    event at once (the claim check then sends one of them on: wasted work), where in log
    order they collided on almost every event."""
    groups: dict[str, list[_Work]] = {}
    for item in work:
        groups.setdefault(item[0].ref, []).append(item)
    ordered = list(groups.values())
    start = _starts.randrange(len(ordered)) if ordered else 0
    return ordered[start:] + ordered[:start]


_starts = random.Random()
"""This module's own generator: a sync thread drawing from the shared one changed its
state under whatever else in the process uses it (property tests, for one)."""


def _counted(blocks: Iterator[bytes], total: list[int]) -> Iterator[bytes]:
    for block in blocks:
        total[0] += len(block)
        yield block
