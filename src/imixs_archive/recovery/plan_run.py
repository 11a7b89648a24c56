"""Send a planned list of snapshots to the workflow, resumable after a kill.

A plan is a list of :class:`Send` (one snapshot per process instance) sorted by instance
id: a restore as of a point in time (``as_of.py``) or a whole-workflow restore (the newest
snapshot of every instance: :func:`newest_of_every_instance`). :class:`PlanRunner` keeps
``workers`` instances in flight (each a GET of the live ``$snapshotid``, then the POST of
the snapshot unless the workflow is at it already), so the workflow sets the pace.

Progress is saved in the service state (``restore.plan.*`` items) as a watermark: every
instance up to ``restore.plan.after`` (in plan order) is done. The watermark moves only
past instances whose POST was answered, and it is saved every ``save_every`` seconds and
at the end. A run of the same plan (same ``key``) that finds a ``running`` or
``stopped`` state resumes: instances up to the watermark are counted as done without a
request; the ones after it are checked against the workflow first, so the instances in
flight when the process was killed are not posted twice (their POST was answered, so the
workflow's instance is at the snapshot; a run resuming a killed one waits
``RESUME_SETTLE`` seconds first, for the POSTs the dead run left in a slow workflow to
land). A finished run (``done``) is not resumed: the next run checks every instance again
(and retries the failed).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import not_a_snapshot, origin_id
from imixs_archive.errors import ArchiveError, IntegrityError
from imixs_archive.recovery.restore import Restorer, attachment_bytes
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowError, WorkflowUnavailableError

SAVE_EVERY = 2.0
"""Seconds between two saves of the watermark while a plan runs."""
RESUME_SETTLE = 10.0
"""Seconds a run that resumes a killed one waits first: the POSTs the dead run had in
flight may still be in the workflow (a slow one queues them); they land before their
instances are checked, and are not posted again."""
WINDOW_PER_WORKER = 4
"""Instances submitted ahead per worker (the watermark waits for the oldest)."""
MAX_FAILURES_SAVED = 100
"""Failures kept in the state document (the report has them all)."""


@dataclass(frozen=True)
class Send:
    """Restore ``snapshot`` (of instance ``origin``)."""

    origin: str
    snapshot: str


@dataclass
class PlanReport:
    """Counts of a plan's run: ``restored`` (posted), ``current`` (the workflow was at
    the snapshot already), ``resumed`` (done by an earlier run that was killed or
    stopped: no request), ``failed`` (instance -> why), ``bytes`` of attachments sent."""

    total: int
    restored: int = 0
    current: int = 0
    resumed: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    corrupt: int = 0
    bytes: int = 0
    stopped: bool = False
    earlier_restored: int = 0
    """Posted by the earlier runs this one resumed (``restore.plan.restored``)."""
    earlier_bytes: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return self.restored + self.current + self.resumed + len(self.failed)

    def rate(self, now: float | None = None) -> float:
        """Instances per second of this run (the resumed ones left out)."""
        elapsed = (now or time.monotonic()) - self.started
        return (self.done - self.resumed) / elapsed if elapsed > 0 else 0.0

    def seconds_left(self, now: float | None = None) -> float | None:
        """The time left at this run's pace (None before the first instance)."""
        rate = self.rate(now)
        return (self.total - self.done) / rate if rate > 0 else None


PlanProgress = Callable[[PlanReport], None]


class PlanRunner:
    """Runs one plan (``key`` names it for resuming) against the workflow."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        *,
        key: str,
        workers: int = 4,
        stop: threading.Event | None = None,
        on_progress: PlanProgress | None = None,
        save_every: float = SAVE_EVERY,
        settle: float = RESUME_SETTLE,
    ) -> None:
        self.archive = archive
        self.settle = settle
        self.key = key
        self.workers = max(1, workers)
        self.stop = stop or threading.Event()
        self.on_progress = on_progress
        self.save_every = save_every
        self._restorer = Restorer(archive, client, workers=1, stop=self.stop)
        self._lock = threading.Lock()
        self._settled: set[str] = set()
        """The instances of this run that were answered (or failed)."""
        self._gap = False
        """An instance before the watermark's next candidate was not answered (a stop)."""

    def run(self, sends: Sequence[Send]) -> PlanReport:
        """Send the plan (sorted here by instance id: the watermark's order)."""
        sends = sorted(sends, key=lambda send: send.origin)
        report = PlanReport(total=len(sends))
        self._settled, self._gap = set(), False
        after, killed = self._resume(report)
        if killed:  # its requests still in the workflow land first
            self.stop.wait(self.settle)
        todo = [send for send in sends if after is None or send.origin > after]
        report.resumed = len(sends) - len(todo)
        watermark = after or ""
        last_save = time.monotonic()
        pending: deque[tuple[Send, Future[None]]] = deque()
        with ThreadPoolExecutor(self.workers, thread_name_prefix="plan") as pool:
            for send in todo:
                if self.stop.is_set():
                    break
                pending.append((send, pool.submit(self._one, send, report)))
                while len(pending) >= self.workers * WINDOW_PER_WORKER or (
                    pending and pending[0][1].done()
                ):
                    watermark = self._settle(pending, watermark)
                if time.monotonic() - last_save >= self.save_every:
                    self._save(report, watermark, "running")
                    last_save = time.monotonic()
            while pending:
                watermark = self._settle(pending, watermark)
        report.stopped = self.stop.is_set() and report.done < report.total
        self._save(report, watermark, "stopped" if report.stopped else "done")
        return report

    def _settle(self, pending: deque[tuple[Send, Future[None]]], watermark: str) -> str:
        """Wait for the oldest instance in flight; the watermark moves past it when it
        was answered (not skipped by a stop) and every one before it was."""
        send, future = pending.popleft()
        future.result()
        self._gap = self._gap or send.origin not in self._settled
        return watermark if self._gap else send.origin

    def _one(self, send: Send, report: PlanReport) -> None:
        if self.stop.is_set():
            return
        try:
            if self._restorer.is_current(send.origin, send.snapshot):
                self._count(report, "current")
            else:
                doc = self.archive.load(send.snapshot)
                self._restorer.post(doc)
                self._count(report, "restored", attachment_bytes(doc))
        except WorkflowError as exc:
            with self._lock:
                report.failed[send.origin] = str(exc)
        except ArchiveError as exc:
            with self._lock:
                report.failed[send.origin] = f"archive: {exc}"
                report.corrupt += isinstance(exc, IntegrityError)
        with self._lock:
            self._settled.add(send.origin)
        if self.on_progress is not None:
            self.on_progress(report)

    def _count(self, report: PlanReport, what: str, size: int = 0) -> None:
        with self._lock:
            setattr(report, what, getattr(report, what) + 1)
            report.bytes += size

    # ---- the saved watermark -------------------------------------------------------------

    def _resume(self, report: PlanReport) -> tuple[str | None, bool]:
        """The saved watermark of this plan's run that was killed or stopped (None: start
        afresh), and whether it was killed (still ``running``); the counts of that run go
        into ``report``."""
        state = self.archive.state.load()
        status = state.get_first("restore.plan.status")
        if state.get_first("restore.plan.key") != self.key or status not in (
            "running",
            "stopped",
        ):
            return None, False
        report.earlier_restored = int(state.get_first("restore.plan.restored", 0))
        report.earlier_bytes = int(state.get_first("restore.plan.bytes", 0))
        after = state.get_first("restore.plan.after")
        return (str(after) if after else None), status == "running"

    def _save(self, report: PlanReport, watermark: str, status: str) -> None:
        with self._lock:
            state = self.archive.state.load()
            state["restore.plan.key"] = self.key
            state["restore.plan.after"] = watermark
            state["restore.plan.restored"] = report.earlier_restored + report.restored
            state["restore.plan.bytes"] = report.earlier_bytes + report.bytes
            state["restore.plan.total"] = report.total
            failed = sorted(report.failed.items())[:MAX_FAILURES_SAVED]
            state["restore.plan.failed"] = [f"{origin}: {why}" for origin, why in failed]
            state["restore.plan.status"] = status
            self.archive.state.save(state)


@dataclass
class PlanCheck:
    """A dry run of a plan: ``planned`` (the workflow is not at the snapshot: it would be
    sent), ``current`` (it is), ``failed`` (instance -> why: the workflow would refuse
    the snapshot, or did not answer for it), ``bytes`` of attachments that would be sent."""

    planned: int = 0
    current: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    corrupt: int = 0
    bytes: int = 0


CHECKED_AT_ONCE = 1024
"""Sends handed to the dry run's threads at a time (a plan of millions is not queued whole)."""


def check_plan(
    archive: Archive,
    client: WorkflowClient,
    sends: Sequence[Send],
    *,
    workers: int = 4,
    stop: threading.Event | None = None,
) -> PlanCheck:
    """What a run of ``sends`` would do, asking the workflow what it holds as the run
    does, and sending nothing. A workflow that is down is not waited for: it ends the
    dry run (``WorkflowUnavailableError``)."""
    stop = stop or threading.Event()
    restorer = Restorer(archive, client, workers=1, stop=stop, wait=False)
    check, lock = PlanCheck(), threading.Lock()

    def one(send: Send) -> None:
        if stop.is_set():  # Ctrl-C, or the workflow down: the requests queued are not made
            return
        try:
            if restorer.is_current(send.origin, send.snapshot):
                with lock:
                    check.current += 1
                return
            doc = archive.load(send.snapshot, with_files=False)
            why = not_a_snapshot(doc)
            with lock:
                if why is not None:
                    check.failed[send.origin] = f"{send.snapshot}: {why}"
                else:
                    check.planned += 1
                    check.bytes += attachment_bytes(doc)
        except WorkflowError as exc:
            if isinstance(exc, WorkflowUnavailableError) and exc.down:
                raise  # the workflow cannot be reached: the dry run ends (not waited for)
            with lock:
                check.failed[send.origin] = str(exc)
        except ArchiveError as exc:
            with lock:
                check.failed[send.origin] = f"archive: {exc}"
                check.corrupt += isinstance(exc, IntegrityError)

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="plan-check") as pool:
        try:
            for start in range(0, len(sends), CHECKED_AT_ONCE):
                list(pool.map(one, sends[start : start + CHECKED_AT_ONCE]))
        except BaseException:  # the workflow down, or Ctrl-C: the others end too
            stop.set()
            raise
    return check


def newest_of_every_instance(archive: Archive) -> list[Send]:
    """The whole-workflow plan: the newest complete snapshot of every instance, by id."""
    return sorted(_newest_sends(archive), key=lambda send: send.origin)


def _newest_sends(archive: Archive) -> Iterator[Send]:
    for snapshot_ids in archive.index.iter_instances():  # oldest first
        for snapshot_id in reversed(snapshot_ids):
            if archive.exists(snapshot_id):
                yield Send(origin_id(snapshot_id), snapshot_id)
                break
