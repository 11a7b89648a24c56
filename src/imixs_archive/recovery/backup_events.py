"""The consumer of ``snapshot.backup[.<mirror>]`` events: the Java backup service's work.

Each round (every ``WORKFLOW_SYNC_INTERVAL``, for ``backup-events`` and inside ``serve``):

1. **Dead locks**: an event seen locked (``<topic>.lock``, or ``.lock.lock`` after a lock
   sent twice) for longer than ``BACKUP_SYNC_DEADLOCK`` is unlocked, so this round takes
   it. Its consumer died between lock and delete; Java calls ``releaseDeadLocks`` there,
   which on the real workflow *deletes* every locked event (reference section 4): here
   the event is kept and backed up.
2. Up to ``WORKFLOW_SYNC_BATCH`` events are read; each is locked, its snapshot written to
   the FTPS tree, and the event deleted. The snapshot comes from the archive; one the
   archive lacks (``$snapshot.history`` removed it first, retention, a Java archive
   writing another keyspace) or cannot read is taken from the workflow
   (``GET /documents/{ref}``, as Java's ``BackupService.pullSnapshot``). With
   ``BACKUP_ONLY`` (no archive beside: the workflow emits the events itself) every
   snapshot is taken from the workflow.
   ``BACKUP_FTP_OVERWRITE`` writes every file again; an event whose ``data`` says
   ``NO_OVERWRITE`` (Java's full backup, ``full_backup.py``) never writes over a file
   that holds its snapshot or a newer one (the Java backup service leaves any file that
   exists; this one writes the event's snapshot over an older one of the instance).
3. Every event ends one way, counted: **written**, **current** (the file holds it or a
   newer one), **gone** (the workflow answers 404 too: the event is deleted, as Java
   does), **given up** (failed ``WORKFLOW_SYNC_MAXATTEMPTS`` times: deleted and logged),
   or **failed** (unlocked, tried again after ``WORKFLOW_SYNC_RETRYDELAY``, doubling with
   each attempt, at most 64x). The FTPS server or the workflow being down, or refusing
   the credentials, ends the round: the events wait, no attempt is counted against them.

No event stays for ever, so a batch of events that cannot be done never fills the read
window for good. A line is logged per round (a round with no event once, not every
interval, as the sync's); :class:`BackupStatus` keeps what the rounds did for the
metrics, ``/readyz`` and the Monitor.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, NotFoundError, TargetUnavailableError
from imixs_archive.periodic import Periodic
from imixs_archive.recovery.backup_ftps import pull_snapshot, put_snapshot
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget, TargetError
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import (
    WorkflowAuthError,
    WorkflowError,
    WorkflowUnavailableError,
)
from imixs_archive.workflow.events import LOCK_SUFFIX, TOPIC_BACKUP, Event

log = logging.getLogger(__name__)

OUTCOMES = ("written", "current", "pulled", "gone", "given_up", "failed", "released")
"""What the rounds count: ``pulled`` (taken from the workflow) is a part of written and
current, ``released`` the dead locks unlocked."""


@dataclass
class EventRound:
    """One round: what each event it read came to."""

    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    finished: dt.datetime | None = None
    read: int = 0
    written: int = 0
    current: int = 0
    pulled: int = 0
    gone: int = 0
    given_up: int = 0
    released: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: str = ""
    """Why the round ended early (the FTPS server or the workflow down): the rest waits."""
    pending: int = 0
    """Events the round read and left in the log (more may wait when ``more``)."""
    more: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stopped

    @property
    def failures(self) -> int:
        """Events that failed, or 1 for a round that ended early with none."""
        return len(self.failed) or int(bool(self.stopped))

    @property
    def removed(self) -> int:
        return self.written + self.current + self.gone + self.given_up

    def summary(self) -> str:
        text = (
            f"{self.read} events: {self.written} written, {self.current} already current "
            f"({self.pulled} taken from the workflow), {self.gone} gone from the workflow, "
            f"{self.given_up} given up, {len(self.failed)} failed, {self.released} dead locks "
            f"released; {self.pending}{' or more' if self.more else ''} left"
        )
        return f"{text}; stopped: {self.stopped}" if self.stopped else text


@dataclass
class BackupStatus:
    """What the backup's rounds did in this process (shared with the web app)."""

    topic: str = TOPIC_BACKUP
    source: str = "archive"
    """``archive`` (the workflow for what it lacks) or ``workflow`` (``BACKUP_ONLY``)."""
    target: str = ""
    interval: float = 0.0
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    rounds: int = 0
    last: EventRound | None = None
    last_success: dt.datetime | None = None
    last_error: str = ""
    """An error that ended a round outside the consumer's own handling (a defect)."""

    def noted(self, done: EventRound) -> None:
        for name in OUTCOMES:
            value = getattr(done, name)
            self.totals[name] += len(value) if isinstance(value, list) else int(value)
        self.rounds += 1
        self.last = done
        if done.ok:
            self.last_success = done.finished or dt.datetime.now(dt.UTC)


class BackupEvents:
    """The consumer of ``snapshot.backup[.<mirror>]`` events (``archive`` None: every
    snapshot from the workflow)."""

    def __init__(
        self,
        archive: Archive | None,
        client: WorkflowClient,
        target: FtpsTarget,
        *,
        mirror: str = "",
        overwrite: bool = False,
        batch: int = 100,
        deadlock_ms: int = 60000,
        max_attempts: int = 8,
        retry_delay_ms: int = 10000,
        status: BackupStatus | None = None,
    ) -> None:
        self.archive, self.client, self.target = archive, client, target
        self.topic = f"{TOPIC_BACKUP}.{mirror}" if mirror else TOPIC_BACKUP
        self.overwrite = overwrite
        self.batch = batch
        self.deadlock_ms = deadlock_ms
        self.max_attempts = max(1, max_attempts)
        self.retry_delay_ms = retry_delay_ms
        self.status = status or BackupStatus()
        self.status.topic = self.topic
        self.status.source = "archive" if archive is not None else "workflow"
        self._attempts: dict[str, tuple[int, float]] = {}
        """Event id -> (attempts failed, monotonic time before which it is not tried)."""
        self._locked_since: dict[str, float] = {}
        self._quiet = False

    def run_round(self) -> EventRound:
        """One pass over the waiting events; the outcome is also noted in ``status``."""
        done = EventRound()
        events: list[Event] = []
        try:
            self._release_dead_locks(done)
            events = self.client.read_events([self.topic], max_count=self.batch)
            done.read, done.more = len(events), len(events) >= self.batch
            for event in events:
                if not self._one(event, done):
                    break
        except ArchiveError as exc:  # the workflow (or the store) failing: the events wait
            done.stopped = f"{'workflow: ' if isinstance(exc, WorkflowError) else ''}{exc}"
        done.finished = dt.datetime.now(dt.UTC)
        done.pending = max(0, done.read - done.removed)
        self.status.noted(done)
        self._quiet = _log_round(self.topic, done, self._quiet)
        if not done.more and not done.stopped:  # every waiting event was read: forget the rest
            seen = {event.id for event in events}
            self._attempts = {k: v for k, v in self._attempts.items() if k in seen}
        return done

    # ---- dead locks ---------------------------------------------------------------------

    def _release_dead_locks(self, done: EventRound) -> None:
        locked = self.client.read_events(
            [f"{self.topic}{LOCK_SUFFIX}", f"{self.topic}{LOCK_SUFFIX * 2}"],
            max_count=self.batch,
        )
        now = time.monotonic()
        seen: dict[str, float] = {}
        for event in locked:
            since = self._locked_since.get(event.id, now)
            if (now - since) * 1000 < self.deadlock_ms:
                seen[event.id] = since
                continue
            try:
                for _ in range(_locks(event.topic, self.topic)):
                    self.client.unlock_event(event.id)
            except WorkflowUnavailableError as exc:
                if exc.down:
                    raise
                continue  # deleted meanwhile (the real workflow answers 500)
            done.released += 1
            log.warning(
                "backup: event %s (%s) was locked for %s ms or more: unlocked to be backed up",
                event.id,
                event.ref,
                self.deadlock_ms,
            )
        self._locked_since = seen

    # ---- one event ----------------------------------------------------------------------

    def _one(self, event: Event, done: EventRound) -> bool:
        """Do one event; False when the round must end (target or workflow down)."""
        waiting = self._attempts.get(event.id)
        if waiting is not None and time.monotonic() < waiting[1]:
            return True  # failed before: not again until its delay has passed
        if not self._lock(event):
            return True
        try:
            sent, pulled = self._write(event.ref, self.overwrite and not event.no_overwrite)
        except NotFoundError:
            self._done_with(event)
            done.gone += 1
            log.warning(
                "backup: snapshot %s is in neither the archive nor the workflow (404): "
                "event %s removed",
                event.ref,
                event.id,
            )
            return True
        except (TargetError, TargetUnavailableError, WorkflowAuthError) as exc:
            done.failed.append(f"{event.ref}: {exc}")
            done.stopped = f"{'workflow: ' if isinstance(exc, WorkflowError) else ''}{exc}"
            self._unlock_quietly(event)
            return False
        except WorkflowUnavailableError as exc:
            if exc.down:
                done.stopped = f"workflow: {exc}"
                self._unlock_quietly(event)
                return False
            self._failed(event, exc, done)
            return True
        except ArchiveError as exc:
            self._failed(event, exc, done)
            return True
        self._done_with(event)
        done.pulled += pulled
        if sent is None:
            done.current += 1
        else:
            done.written += 1
        return True

    def _done_with(self, event: Event) -> None:
        """The event is removed from the log and its failures forgotten."""
        self.client.delete_event(event.id)
        self._attempts.pop(event.id, None)

    def _lock(self, event: Event) -> bool:
        try:
            return self.client.lock_event(event.id)
        except WorkflowUnavailableError as exc:
            if exc.down:
                raise
            return False  # the real workflow's 500 for an entry deleted meanwhile

    def _write(self, ref: str, overwrite: bool) -> tuple[int | None, bool]:
        """Write the snapshot: ``(bytes sent or None when current, from the workflow)``."""
        if self.archive is not None:
            try:
                return put_snapshot(self.archive, self.target, ref, overwrite=overwrite), False
            except (TargetError, TargetUnavailableError):
                raise
            except NotFoundError:
                pass  # the archive lacks it: the workflow's, as the Java backup service does
            except ArchiveError as exc:
                log.warning(
                    "backup: %s cannot be read from the archive (%s): taken from the workflow",
                    ref,
                    exc,
                )
        return pull_snapshot(self.client, self.target, ref, overwrite=overwrite), True

    def _unlock_quietly(self, event: Event) -> None:
        """Unlock after a failure of the target or the workflow; when the workflow cannot
        be told, the event stays locked: a dead lock, unlocked in a later round."""
        try:
            self.client.unlock_event(event.id)
        except ArchiveError as exc:
            log.debug("backup: event %s stays locked: %s", event.id, exc)

    def _failed(self, event: Event, exc: ArchiveError, done: EventRound) -> None:
        """An attempt failed: unlocked for another after a growing delay (as the sync's
        retries), removed and logged once ``max_attempts`` failed."""
        attempts = self._attempts.get(event.id, (0, 0.0))[0] + 1
        if attempts < self.max_attempts:
            delay = self.retry_delay_ms / 1000 * min(2 ** (attempts - 1), 64)
            self._attempts[event.id] = (attempts, time.monotonic() + delay)
            self.client.unlock_event(event.id)
            done.failed.append(f"{event.ref}: {exc}")
            return
        self._done_with(event)
        done.given_up += 1
        log.error(
            "backup: snapshot %s failed %d times, event %s removed (back it up with "
            "'imixs-archive backup ftps://...'): %s",
            event.ref,
            attempts,
            event.id,
            exc,
        )

    def run(
        self,
        interval: float,
        stop: threading.Event,
        on_round: Callable[[EventRound], None] | None = None,
    ) -> None:
        """Rounds until ``stop``, one every ``interval`` seconds (the first at once), each
        given to ``on_round``."""
        self.status.interval = interval

        def one_round() -> None:
            done = self.run_round()
            if on_round is not None:
                on_round(done)

        def failed(exc: Exception) -> None:  # a defect: logged, and the next round tries
            self.status.last_error = f"{type(exc).__name__}: {exc}"
            log.error("backup: round failed", exc_info=exc)

        Periodic(
            "backup-events", interval, one_round, on_error=failed, at_once=True, stop=stop
        ).run()


def _locks(topic: str, base: str) -> int:
    """How many ``.lock`` suffixes ``topic`` has over ``base``."""
    count = 0
    while topic != base and topic.endswith(LOCK_SUFFIX):
        topic, count = topic.removesuffix(LOCK_SUFFIX), count + 1
    return count


def _log_round(topic: str, done: EventRound, quiet: bool) -> bool:
    """A line for the round; a round with no event is said once, not every interval (as
    the sync's). Whether this round was idle."""
    if not done.read and not done.released and done.ok:
        log.log(logging.DEBUG if quiet else logging.INFO, "backup: %s: no event waiting", topic)
        return True
    level = logging.INFO if done.ok else logging.WARNING
    log.log(level, "backup: %s: %s", topic, done.summary())
    for failure in done.failed[:10]:
        log.warning("backup: failed: %s", failure)
    return False


def consume_backup_events(
    settings: Settings,
    archive: Archive | None,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
    status: BackupStatus | None = None,
    on_round: Callable[[EventRound], None] | None = None,
) -> EventRound | None:
    """The FTPS backup of ``snapshot.backup`` events as the settings describe it (the
    workflow, the FTPS target, the mirror, overwrite, batch, dead locks, attempts,
    ``BACKUP_ONLY`` and the interval; ``archive`` None: every snapshot from the workflow),
    for the CLI's ``backup-events`` and for ``serve``:
    one round (``once``: its report), or rounds every ``WORKFLOW_SYNC_INTERVAL`` until
    ``stop``, each noted in ``status`` and given to ``on_round``."""
    location = FtpsLocation.from_settings(settings)
    status = status or BackupStatus()
    status.target = str(location)
    with (
        WorkflowClient.from_settings(settings) as client,
        FtpsTarget(location) as target,
    ):
        events = BackupEvents(
            None if settings.backup_only else archive,
            client,
            target,
            mirror=settings.backup_mirror_id.strip(),
            overwrite=settings.backup_ftp_overwrite,
            batch=settings.workflow_sync_batch,
            deadlock_ms=settings.backup_sync_deadlock,
            max_attempts=settings.workflow_sync_maxattempts,
            retry_delay_ms=settings.workflow_sync_retrydelay,
            status=status,
        )
        if once:
            return events.run_round()
        interval = settings.workflow_sync_interval / 1000
        events.run(interval, stop or threading.Event(), on_round)
    return None
