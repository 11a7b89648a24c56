"""Runs of ``verify`` and ``backup`` recorded in the store (``archive/last_runs.py``) by
whatever runs them (the commands, ``serve``'s jobs), and this process's jobs and the store's
records read as one: the Monitor and ``/metrics`` show a run of the command from cron as
they show a job of their own."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.last_runs import RECORDED, LastRun, here
from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import ArchiveError
from imixs_archive.services.jobs import JobRunner, JobState, JobStatus, JobStoppedError, in_job
from imixs_archive.timezones import now_ms

log = logging.getLogger(__name__)

__all__ = ["RECORDED", "Outcome", "latest", "recorded"]


@dataclass
class Outcome:
    """What a recorded run ended with: set by the run before its block ends."""

    ok: bool = True
    message: str = ""
    result: dict[str, Any] = field(default_factory=dict)


@contextmanager
def recorded(archive: Archive, job: str) -> Iterator[Outcome]:
    """Record the run in the block as the last run of ``job`` when it ends: finished (with
    the ``Outcome`` it set) or failed (with its error). A run stopped on request (a stop of
    the job, Ctrl-C) is not recorded."""
    started = now_ms()
    outcome = Outcome()
    try:
        yield outcome
    except JobStoppedError:
        raise
    except Exception as exc:
        error = str(exc) if isinstance(exc, ArchiveError) else f"{type(exc).__name__}: {exc}"
        _keep(archive, LastRun(job, started, now_ms(), False, error=error, by=_by()))
        raise
    _keep(
        archive,
        LastRun(job, started, now_ms(), outcome.ok, outcome.message, None, outcome.result, _by()),
    )


def _by() -> str:
    return here("a job of serve" if in_job() else "a command")


def _keep(archive: Archive, run: LastRun) -> None:
    try:
        archive.runs.record(run)
    except ArchiveError as exc:  # the run's own outcome says more than its record
        log.warning("%s: its run could not be recorded in the store: %s", run.job, exc)


def _after(ended: dt.datetime | None, run: LastRun) -> bool:
    return ended is not None and ended > run.finished_at


def latest(jobs: JobRunner, archive: Archive, name: str) -> JobStatus | None:
    """The run of ``name`` to show: this process's while it runs, else the last one that
    ended, this process's or another's (a command, another replica) as the store recorded
    it; a run stopped on request is shown only when the store recorded none."""
    status = jobs.status(name)
    if status is not None and status.active:
        return status
    try:
        run = archive.runs.get(name) if name in RECORDED else None
    except ArchiveError:
        run = None
    if run is None:
        return status
    ended = status.finished if status is not None else None
    if status is not None and status.state is not JobState.STOPPED and _after(ended, run):
        return status
    state = JobState.FINISHED if run.error is None else JobState.FAILED
    message = f"{run.message} (by {run.by})".lstrip() if run.by else run.message
    return JobStatus(
        name, state, run.started_at, run.finished_at, {}, message, run.error, dict(run.result)
    )
