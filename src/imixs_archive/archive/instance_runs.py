"""A job over every process instance, or a part of them, that stops and goes on.

The instances are met one at a time (the ids of its snapshots, oldest first) in the
store's range order of ``snapshots_by_uniqueid``, so ``--part K/N`` gives each of N
processes a range of its own (``part_runs.py``: the lease, the plan of cuts, the place and
the end).
The job's book (``JOB/K/N`` in ``archive_checks``) holds the place after the last instance
the job finished with what the job counted up to there, written every few seconds and
when the job stops (Ctrl-C, or the job saying so): run again, it goes on after that
instance with those counts. A kill loses the counts of the last few seconds, never the
place of what was done: the instances after the last save are met again, and a job's
work on an instance is one it can do twice (retention: what was deleted is gone).

A book belongs to one ``key`` (what the job was asked: retention's policy): a run asked
something else begins again. ``keep_book=False`` walks without a book or a lease (a
preview that nobody resumes).

:func:`run_over_instances` meets one instance at a time. A job that walks on its own
(several instances in flight, a place that trails the walk: the backup of everything, the
table export) opens the run with :func:`open_instance_run` and saves its place itself
(``recovery/backup_book.py``, ``analytics/export_runs.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

from imixs_archive.archive.part_runs import PartRun
from imixs_archive.document.conventions import is_snapshot_id, snapshot_order
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import SNAPSHOTS_BY_UNIQUEID

WALK = "instances"


class RunAsked(TypedDict):
    """Which run over the instances: ``name``, asked ``key``; part ``part`` of ``parts``
    (default 1 of 1); ``restart`` to begin again, not where a stopped run ended."""

    name: str
    key: str
    part: NotRequired[int]
    parts: NotRequired[int]
    restart: NotRequired[bool]


class InstanceJob(Protocol):
    """What a job over instances does, and what of it a book keeps."""

    def visit(self, ids: list[str]) -> bool:
        """Do the job's work on one instance (its snapshot ids, oldest first); False to
        stop after it (the book keeps the place: the next run goes on). What it counts of
        an instance it counts when done with it, as the last thing (an instance stopped
        in the middle is met again), except work that cannot be done twice (what a
        delete removed is not met again)."""

    def saved(self) -> dict[str, Any]:
        """What the job counted so far, as JSON."""

    def restore(self, saved: dict[str, Any]) -> None:
        """Take up the counts of a stopped run (what :meth:`saved` gave)."""


@dataclass
class InstanceRun:
    finished: bool
    """False when the job stopped before the end of its part (its book goes on)."""
    resumed: str = ""
    """Where the run went on from ('' when it began)."""


def run_over_instances(
    backend: Backend,
    job: InstanceJob,
    *,
    holder: str,
    keep_book: bool = True,
    seen: Callable[[], None] | None = None,
    **asked: Unpack[RunAsked],
) -> InstanceRun:
    """Walk part ``part`` of ``parts`` of the instances through ``job``, going on from the
    book of an unfinished run ``name`` asked ``key`` unless ``restart``; ``seen`` after
    each instance. BusyError when another process runs this part."""
    if not keep_book:
        for _at, ids in instances_in_range(backend, None, None):
            going_on = job.visit(ids)
            if seen is not None:
                seen()
            if not going_on:
                return InstanceRun(finished=False)
        return InstanceRun(finished=True)
    with open_instance_run(backend, holder=holder, **asked) as run:
        if run.saved is not None:
            job.restore(run.saved)
        place = run.start()
        try:
            for at, ids in run.instances():
                going_on = job.visit(ids)
                place = at
                run.met += 1
                if seen is not None:
                    seen()
                if not going_on:
                    run.save_job(place, job.saved())
                    return InstanceRun(False, run.resumed)
                if run.clock.due():
                    run.save_job(place, job.saved())
        except KeyboardInterrupt:
            run.save_job(place, job.saved())  # after the last instance finished: goes on there
            raise
        run.finish()
    return InstanceRun(True, run.resumed)


class OpenRun(PartRun):
    """Part ``part`` of ``parts`` of a run over the instances, its lease held
    (:meth:`PartRun.held`): where it walks (from :meth:`start` up to ``upto``), what a
    stopped run of it saved, and its book. For a job that walks on its own (several
    instances in flight, a place that trails the walk): :func:`run_over_instances` is the
    usual way."""

    key = ""
    """What the job was asked: a book of another key is not taken up."""
    saved: dict[str, Any] | None = None
    """What the job saved in the run it goes on from (None: it begins)."""
    resumed = ""
    """Where the run went on from ('' when it began)."""
    met = 0
    """Instances met so far in this run, with those of the runs it goes on from."""

    @property
    def upto(self) -> Position | None:
        return self.bounds(0)[1]

    def go_on(self, key: str, restart: bool) -> None:
        """Go on from the book of an unfinished run of this plan asked ``key``, unless
        ``restart``."""
        self.key = key
        self.take_up(restart, accept=lambda saved: saved.get("key") == key)
        if self.found is not None:
            self.saved, self.met = self.found["job"], int(self.found.get("instances", 0))
            self.resumed = f"after {self.met:,} instances"

    def begin_again(self) -> None:
        super().begin_again()
        self.saved, self.resumed, self.met = None, "", 0

    def instances(self) -> Iterator[tuple[Position, list[str]]]:
        """The part's instances after the place the run goes on from."""
        return instances_in_range(self.backend, self.start(), self.upto)

    def save_job(self, place: Position | None, job: dict[str, Any]) -> None:
        """Every instance up to ``place`` is done; ``job`` what the job counted so far."""
        self.after = place
        self.save({"key": self.key, "instances": self.met, "job": job})


@contextmanager
def open_instance_run(
    backend: Backend,
    *,
    name: str,
    key: str,
    holder: str,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
) -> Iterator[OpenRun]:
    """Part ``part`` of ``parts`` of the run ``name`` (asked ``key``) for the block, its
    lease held, taken up where a stopped run stood unless ``restart``. BusyError when
    another process runs this part."""
    tables = {WALK: SNAPSHOTS_BY_UNIQUEID}
    with OpenRun.held(backend, name, tables, holder=holder, part=part, parts=parts) as run:
        run.go_on(key, restart)
        yield run


def instances_in_range(
    backend: Backend, after: Position | None, upto: Position | None
) -> Iterator[tuple[Position, list[str]]]:
    """(position, snapshot ids oldest first) of each instance after ``after`` and up to
    ``upto`` in the store's range order: one instance's ids in memory at a time."""
    current: tuple[Position, str] | None = None
    ids: list[str] = []
    rows = backend.scan_range(SNAPSHOTS_BY_UNIQUEID, after, upto, columns=["snapshot"])
    for position, row in rows:
        if current is None or row["uniqueid"] != current[1]:
            if current is not None and ids:
                yield current[0], sorted(ids, key=snapshot_order)
            current, ids = (position, row["uniqueid"]), []
        if is_snapshot_id(row["snapshot"]):
            ids.append(row["snapshot"])
    if current is not None and ids:
        yield current[0], sorted(ids, key=snapshot_order)
