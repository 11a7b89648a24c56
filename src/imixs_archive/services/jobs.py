"""Long operations started from the web API or UI, run in background threads.

A :class:`JobRunner` holds named jobs (``verify``, ``backup``, ``resync``, ``restore``:
the job functions are in ``workflow_jobs`` and ``restore_jobs``, the others in
``web/api_jobs.py``). At most one run per name at a time; the last run of each name stays
readable (state, times, progress, message, error) until the next one starts.

A job function gets a :class:`Job` handle: it reports progress with ``job.progress(...)``
and a line of text with ``job.say(...)``, and polls ``job.stop_requested`` (a
``threading.Event`` underneath) to end early when asked. What it returns is its final
message. An ``ArchiveError`` fails it with that error's message; anything else fails it
with the exception's type and message (the traceback goes to the log, not to callers).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from imixs_archive.errors import ArchiveError, BusyError, NotFoundError
from imixs_archive.jsonable import Jsonable

log = logging.getLogger(__name__)


class JobState(StrEnum):
    RUNNING = "running"
    STOPPING = "stopping"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"


ACTIVE = (JobState.RUNNING, JobState.STOPPING)

JOB_NAMES = ("verify", "backup", "resync", "restore", "ledger-verify")
"""The jobs ``serve`` runs (``/api/jobs/{name}``; any other name is a 404)."""


class JobBusyError(BusyError):
    """A job of that name is already running (the web app answers 409 Conflict)."""


class JobStoppedError(ArchiveError):
    """Raised by ``Job.check_stop`` inside a job asked to stop: ends it as stopped."""


class ShuttingDownError(ArchiveError):
    """The runner is shutting down and starts nothing new."""

    exit_code = 75


@dataclass
class JobStatus(Jsonable):
    """A snapshot of one run of a job, safe to hand out (a copy)."""

    JSON_EXTRA = ("active",)

    name: str
    state: JobState
    started: dt.datetime
    finished: dt.datetime | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    error: str | None = None
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


class Job:
    """The handle a job function gets: progress out, stop requests in."""

    def __init__(self, name: str, lock: threading.Lock) -> None:
        self.name = name
        self.stop_event = threading.Event()
        self._lock = lock
        self._status = JobStatus(name, JobState.RUNNING, _now())

    @property
    def stop_requested(self) -> bool:
        return self.stop_event.is_set()

    def progress(self, **values: Any) -> None:
        """Set progress values (numbers or short strings) shown to callers."""
        with self._lock:
            self._status.progress.update(values)

    def add(self, **increments: int) -> None:
        """Add to progress counters."""
        with self._lock:
            for key, count in increments.items():
                self._status.progress[key] = self._status.progress.get(key, 0) + count

    def check_stop(self) -> None:
        """End the job here (as stopped) if a stop was requested."""
        if self.stop_event.is_set():
            raise JobStoppedError(f"{self.name} stopped on request")

    def set_result(self, result: dict[str, Any]) -> None:
        """What the job found (JSON-able), shown with its status."""
        with self._lock:
            self._status.result = result

    def say(self, message: str) -> None:
        with self._lock:
            self._status.message = message

    def snapshot(self) -> JobStatus:
        with self._lock:
            status = self._status
            return JobStatus(
                status.name,
                status.state,
                status.started,
                status.finished,
                dict(status.progress),
                status.message,
                status.error,
                dict(status.result),
            )

    def _end(self, state: JobState, message: str | None, error: str | None) -> None:
        with self._lock:
            self._status.state = state
            self._status.finished = _now()
            if message is not None:
                self._status.message = message
            self._status.error = error

    def _request_stop(self) -> None:
        self.stop_event.set()
        with self._lock:
            if self._status.state is JobState.RUNNING:
                self._status.state = JobState.STOPPING


JobFunction = Callable[[Job], "str | None"]
"""What a job runs: it gets its :class:`Job` handle and returns its final message."""

MAX_LISTED = 200
"""Entries of a list (failures, warnings, problems) kept in a job's result or an overview;
the counts stay whole."""


class JobRunner:
    """Named background jobs, one run per name at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._closed = False

    def start(self, name: str, function: JobFunction, *, message: str = "") -> JobStatus:
        """Start ``function`` as job ``name``; ``JobBusyError`` while one is running."""
        with self._lock:
            if self._closed:
                raise ShuttingDownError("the service is shutting down")
            current = self._jobs.get(name)
            if current is not None and current.snapshot().active:
                raise JobBusyError(f"{name} is already running (stop it or wait for it)")
            job = Job(name, threading.Lock())
            job.say(message)
            thread = threading.Thread(
                target=self._run, args=(job, function), name=f"job-{name}", daemon=True
            )
            self._jobs[name] = job
            self._threads[name] = thread
        thread.start()
        return job.snapshot()

    def _run(self, job: Job, function: JobFunction) -> None:
        _thread.job = job.name
        try:
            message = function(job)
        except JobStoppedError as exc:
            job._end(JobState.STOPPED, str(exc), None)
        except ArchiveError as exc:
            job._end(JobState.FAILED, None, str(exc))
        except Exception as exc:  # a job never takes the process down; the log has it all
            log.exception("job %s failed", job.name)
            job._end(JobState.FAILED, None, f"internal error: {type(exc).__name__}: {exc}")
        else:
            state = JobState.STOPPED if job.stop_requested else JobState.FINISHED
            job._end(state, message, None)

    def status(self, name: str) -> JobStatus | None:
        """The current or last run of ``name``; None if it never ran."""
        with self._lock:
            job = self._jobs.get(name)
        return job.snapshot() if job is not None else None

    def statuses(self) -> list[JobStatus]:
        with self._lock:
            jobs = list(self._jobs.values())
        return [job.snapshot() for job in jobs]

    def stop(self, name: str) -> JobStatus:
        """Ask a running job to stop (it ends at its next check); no-op when not running."""
        with self._lock:
            job = self._jobs.get(name)
        if job is None:
            raise NotFoundError(f"{name} has not run")
        if job.snapshot().active:
            job._request_stop()
        return job.snapshot()

    def wait(self, name: str, timeout: float | None = None) -> JobStatus | None:
        """Wait for the run of ``name`` to end (or the timeout); its status."""
        with self._lock:
            thread = self._threads.get(name)
        if thread is not None:
            thread.join(timeout)
        return self.status(name)

    def shutdown(self, timeout: float = 10.0) -> list[str]:
        """Refuse new jobs, ask running ones to stop, wait up to ``timeout`` seconds in all.
        Returns the names of jobs still running after that (their threads are daemons)."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
            threads = dict(self._threads)
        for job in jobs:
            if job.snapshot().active:
                job._request_stop()
        deadline = time.monotonic() + timeout
        for thread in threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        return [name for name, thread in threads.items() if thread.is_alive()]


_thread = threading.local()


def in_job() -> bool:
    """Whether the calling thread runs a job of a :class:`JobRunner` (``serve``'s)."""
    return getattr(_thread, "job", None) is not None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
