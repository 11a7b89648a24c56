"""Restore into the workflow: a date range, one process instance, or one snapshot.

A range restore walks the by-modified index day by day (UTC days; the range bounds are
instants compared in UTC, so the server's time zone never shifts a day). For each process
instance met, the newest snapshot whose ``$modified`` is inside the range is the candidate;
the filters (item name + regular expression) decide whether it goes: as in the Java
service, every value of the item must contain a match (``re.search``, Java's ``find()``)
and an instance without the item passes; in strict mode every value must match whole and
the item must be there; an instance whose live ``$snapshotid`` in the workflow is
already that snapshot is skipped; else the snapshot is POSTed with its files merged back,
streamed from the store.

Progress is kept where the Java service keeps it (``restore.*`` items of the state
document) and saved after every instance, so a crash or a stop resumes at the day it was
in; instances already restored there are skipped by the ``$snapshotid`` check, so nothing
is sent twice. A workflow that answers 406 or 5xx for one instance records that instance
as failed and the restore goes on; a workflow that is down pauses the restore until it is
back (or the restore is stopped). A dry run asks the workflow the same questions but does
not wait for it: a workflow that is down ends it with a ``WorkflowUnavailableError``
(exit 7). A snapshot the workflow would refuse (``not_a_snapshot``: its type) is counted
as failed by the dry run as by the real run, never promised.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files, not_a_snapshot, origin_id
from imixs_archive.document.model import Document
from imixs_archive.errors import ArchiveError, ConfigError, IntegrityError, NotFoundError
from imixs_archive.timezones import epoch_ms, from_epoch_ms
from imixs_archive.workflow.client import WorkflowClient, refuse_non_snapshot
from imixs_archive.workflow.errors import WorkflowError, WorkflowUnavailableError

Filter = tuple[str, re.Pattern[str]]
MAX_PAUSE = 60.0


@dataclass(frozen=True)
class RestoreRange:
    """What to restore: instants ``first``..``last`` (aware, compared in UTC) and filters."""

    first: dt.datetime
    last: dt.datetime
    filters: tuple[Filter, ...] = ()
    strict: bool = False
    """Filters match whole values and need the item (default: the Java service's rule)."""

    def __post_init__(self) -> None:
        if self.first.tzinfo is None or self.last.tzinfo is None:
            raise ConfigError("restore range bounds must carry an offset (or be given in UTC)")
        if self.first > self.last:
            raise ConfigError("the restore range ends before it starts")

    def days(self, archive: Archive, start: dt.date | None = None) -> Iterator[dt.date]:
        """The UTC days of the range (from ``start`` on) that the archive's day index
        holds: a range of decades walks only the days with snapshots."""
        first = max(start or dt.date.min, self.first.astimezone(dt.UTC).date())
        return archive.days.with_snapshots(first, self.last.astimezone(dt.UTC).date())

    def contains(self, when: object) -> bool:
        return isinstance(when, dt.datetime) and self.first <= _utc(when) <= self.last

    def options_text(self) -> str:
        return ";".join(f"{name}={pattern.pattern}" for name, pattern in self.filters)


def parse_filter(text: str) -> Filter:
    """``ITEM=REGEX`` as given on the command line (the expression trimmed, as in Java)."""
    name, sep, pattern = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"a filter is ITEM=REGEX, got {text!r}")
    try:
        return name.strip().lower(), re.compile(pattern.strip())
    except re.error as exc:
        raise ConfigError(f"filter {text!r}: {exc}") from None


def matches(doc: Document, filters: tuple[Filter, ...], *, strict: bool = False) -> bool:
    """The Java rule (``RestoreScheduler.matchFilterOptions``): every value of each filtered
    item contains a match of its expression; a missing or empty item passes. ``strict``:
    every value matches whole, and the item must have values."""
    for name, pattern in filters:
        values = doc.get_values(name)
        if strict:
            if not values or not all(pattern.fullmatch(str(value)) for value in values):
                return False
        elif not all(pattern.search(str(value)) for value in values):
            return False
    return True


@dataclass
class RestoreReport:
    """Counts and what failed; ``planned`` lists (instance, snapshot, bytes) in a dry run.
    ``bytes``: the attachments sent (a dry run sends none: ``planned_bytes``)."""

    restored: int = 0
    skipped: int = 0
    filtered: int = 0
    bytes: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    corrupt: int = 0
    """Of the failed: archived bytes that did not check out (an IntegrityError)."""
    planned: list[tuple[str, str, int]] = field(default_factory=list)
    stopped: bool = False
    point: dt.date | None = None

    @property
    def planned_bytes(self) -> int:
        """The attachments a dry run would send: the sum of the sizes in ``planned``."""
        return sum(size for _origin, _snapshot, size in self.planned)


Progress = Callable[[RestoreReport], None]


class Restorer:
    """Sends snapshots from the archive to the workflow."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        *,
        workers: int = 4,
        stop: threading.Event | None = None,
        on_progress: Progress | None = None,
        pause: Callable[[float], None] | None = None,
        wait: bool = True,
    ) -> None:
        """``pause``: how to wait before asking a workflow that is down again (default:
        until the stop is set, at most that long); ``wait=False`` (a dry run): a workflow
        that is down ends the restore (``WorkflowUnavailableError``) instead."""
        self.archive = archive
        self.client = client
        self.workers = max(1, workers)
        self.stop = stop or threading.Event()
        self.on_progress = on_progress
        self._pause: Callable[[float], object] = pause or self.stop.wait
        self.wait = wait
        self._lock = threading.Lock()

    # ---- a range ------------------------------------------------------------------------

    def restore_range(self, wanted: RestoreRange, *, dry_run: bool = False) -> RestoreReport:
        report = RestoreReport()
        start = None if dry_run else self._resume_point(wanted, report)
        done: set[str] = set()
        with ThreadPoolExecutor(self.workers, thread_name_prefix="restore") as pool:
            for day in wanted.days(self.archive, start):
                if self.stop.is_set():
                    report.stopped = True
                    break
                report.point = day
                origins = [o for o in self._origins_of_day(day) if o not in done]
                done.update(origins)
                try:
                    list(
                        pool.map(lambda o: self._one_instance(o, wanted, report, dry_run), origins)
                    )
                except BaseException:  # Ctrl-C, or a dry run's workflow down: the others stop
                    self.stop.set()
                    raise
                if not dry_run and not self.stop.is_set():
                    self._save(wanted, report, day + dt.timedelta(days=1), "running")
        if not dry_run:
            self._save(wanted, report, report.point, "stopped" if report.stopped else "done")
        return report

    def _origins_of_day(self, day: dt.date) -> list[str]:
        seen: dict[str, None] = {}
        for _day, snapshot_id in self.archive.days.iter_days(day, day):
            seen.setdefault(origin_id(snapshot_id))
        return list(seen)

    def newest_in_range(self, origin: str, wanted: RestoreRange) -> Document | None:
        for snapshot_id in self.archive.list_instance(origin):  # newest first
            doc = self.archive.load(snapshot_id, with_files=False)
            if wanted.contains(doc.get_first("$modified")):
                return doc
        return None

    def _one_instance(
        self, origin: str, wanted: RestoreRange, report: RestoreReport, dry_run: bool
    ) -> None:
        if self.stop.is_set():
            return
        try:
            candidate = self.newest_in_range(origin, wanted)
            if candidate is None:
                return
            if not matches(candidate, wanted.filters, strict=wanted.strict):
                self._count(report, "filtered")
                return
            snapshot_id = str(candidate.get_first("$uniqueid"))
            if self._is_current(origin, snapshot_id):
                self._count(report, "skipped")
                return
            size = attachment_bytes(candidate)
            if dry_run:
                self._plan(report, origin, candidate, size)
                return
            self._send(snapshot_id)
            self._count(report, "restored", size)
        except WorkflowError as exc:
            self._unless_down(exc)
            with self._lock:
                report.failed[origin] = str(exc)
        except ArchiveError as exc:
            with self._lock:
                report.failed[origin] = f"archive: {exc}"
                report.corrupt += isinstance(exc, IntegrityError)
        self._progress(report)

    def _plan(self, report: RestoreReport, origin: str, doc: Document, size: int) -> None:
        """A dry run's snapshot: planned, or failed as the real run would fail it."""
        snapshot_id = str(doc.get_first("$uniqueid"))
        with self._lock:
            if (why := not_a_snapshot(doc)) is not None:
                report.failed[origin] = f"{snapshot_id}: {why}"
            else:
                report.planned.append((origin, snapshot_id, size))

    def _unless_down(self, exc: WorkflowError) -> None:
        """A workflow that is down ends a restore that does not wait for it (a dry run):
        raised again, saying so, instead of failing one instance after the other."""
        if self.wait or not isinstance(exc, WorkflowUnavailableError) or not exc.down:
            return
        raise WorkflowUnavailableError(
            f"the workflow cannot be reached ({exc}); a dry run asks it what it holds, "
            "so it cannot say what would be restored; nothing was sent",
            down=True,
        ) from None

    # ---- one instance, one snapshot -----------------------------------------------------

    def restore_snapshot(self, snapshot_id: str, *, dry_run: bool = False) -> bool:
        """Send one snapshot unless the workflow's instance already is at it; ``dry_run``
        only answers whether it would be sent."""
        try:
            if self._is_current(origin_id(snapshot_id), snapshot_id):
                return False
        except WorkflowError as exc:
            self._unless_down(exc)
            raise
        if dry_run:
            doc = self.archive.load(snapshot_id, with_files=False)  # an unknown id fails here
            refuse_non_snapshot(doc)  # as the real run would
        else:
            self._send(snapshot_id)
        return True

    def restore_instance(self, origin: str, *, dry_run: bool = False) -> RestoreReport:
        """Every archived snapshot of one instance the workflow does not hold, oldest first;
        ``dry_run`` lists them in ``planned`` and sends nothing. An instance the archive
        holds no snapshot of is a ``NotFoundError`` (a mistyped id restores nothing)."""
        report = RestoreReport()
        snapshot_ids = self.archive.list_instance(origin, newest_first=False)
        if not snapshot_ids:
            raise NotFoundError(f"{origin}: the archive holds no snapshot of this process instance")
        for snapshot_id in snapshot_ids:
            if self.stop.is_set():
                report.stopped = True
                break
            try:
                if self._workflow_has(snapshot_id):
                    report.skipped += 1
                elif dry_run:
                    doc = self.archive.load(snapshot_id, with_files=False)
                    if (why := not_a_snapshot(doc)) is not None:
                        report.failed[snapshot_id] = why
                    else:
                        report.planned.append((origin, snapshot_id, attachment_bytes(doc)))
                else:
                    self._send(snapshot_id)
                    report.restored += 1
            except WorkflowError as exc:
                self._unless_down(exc)
                report.failed[snapshot_id] = str(exc)
            self._progress(report)
        return report

    # ---- the workflow -------------------------------------------------------------------

    def is_current(self, origin: str, snapshot_id: str) -> bool:
        """Whether the workflow's instance ``origin`` is at ``snapshot_id`` (its live
        ``$snapshotid``); waits while the workflow is down (unless ``wait`` is off)."""
        try:
            return self._is_current(origin, snapshot_id)
        except WorkflowError as exc:
            self._unless_down(exc)
            raise

    def post(self, doc: Document) -> None:
        """POST a snapshot (loaded with its files); waits while the workflow is down."""
        self._retrying(lambda: self.client.post_snapshot(doc))

    def _is_current(self, origin: str, snapshot_id: str) -> bool:
        try:
            live = self._retrying(lambda: self.client.get_document(origin, ["$snapshotid"]))
        except NotFoundError:
            return False
        return bool(live.get_first("$snapshotid") == snapshot_id)

    def _workflow_has(self, snapshot_id: str) -> bool:
        try:
            self._retrying(lambda: self.client.get_document(snapshot_id, ["$uniqueid"]))
        except NotFoundError:
            return False
        return True

    def _send(self, snapshot_id: str) -> None:
        self._retrying(lambda: self.client.post_snapshot(self.archive.load(snapshot_id)))

    def _retrying(self, call: Callable[[], Any]) -> Any:
        """Run a workflow call; while the workflow is down, pause and try again."""
        delay = 1.0
        while True:
            try:
                return call()
            except WorkflowUnavailableError as exc:
                if not exc.down or self.stop.is_set() or not self.wait:
                    raise
                self._pause(delay)
                delay = min(delay * 2, MAX_PAUSE)

    # ---- progress -----------------------------------------------------------------------

    def _count(self, report: RestoreReport, what: str, size: int = 0) -> None:
        with self._lock:
            setattr(report, what, getattr(report, what) + 1)
            report.bytes += size

    def _progress(self, report: RestoreReport) -> None:
        if self.on_progress is not None:
            self.on_progress(report)

    def _resume_point(self, wanted: RestoreRange, report: RestoreReport) -> dt.date | None:
        state = self.archive.state.load()
        same = (
            state.get_first("restore.from") == epoch_ms(wanted.first)
            and state.get_first("restore.to") == epoch_ms(wanted.last)
            and state.get_first("restore.options", "") == wanted.options_text()
            and state.get_first("restore.status") in ("running", "stopped")
        )
        if not same:
            return None
        report.restored = int(state.get_first("restore.count", 0))
        report.bytes = int(state.get_first("restore.size", 0))
        point = state.get_first("restore.point")
        if not isinstance(point, int):
            return None
        return from_epoch_ms(point).date()

    def _save(
        self, wanted: RestoreRange, report: RestoreReport, point: dt.date | None, status: str
    ) -> None:
        with self._lock:
            state = self.archive.state.load()
            state["restore.from"] = epoch_ms(wanted.first)
            state["restore.to"] = epoch_ms(wanted.last)
            state["restore.options"] = wanted.options_text()
            day = point or wanted.first.astimezone(dt.UTC).date()
            state["restore.point"] = epoch_ms(dt.datetime.combine(day, dt.time(), dt.UTC))
            state["restore.count"] = report.restored
            state["restore.size"] = report.bytes
            state["restore.errors"] = len(report.failed)
            state["restore.failed"] = [f"{o}: {why}" for o, why in sorted(report.failed.items())]
            state["restore.status"] = status
            self.archive.state.save(state)


def attachment_bytes(doc: Document) -> int:
    """The bytes of a snapshot's files, as its entries say."""
    total = 0
    for entry in iter_files(doc):
        total += entry.size or 0
    return total


def _utc(when: dt.datetime) -> dt.datetime:
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
