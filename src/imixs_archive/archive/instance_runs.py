"""A job over every process instance, or a part of them, that stops and goes on.

The instances are met one at a time (the ids of its snapshots, oldest first) in the
store's range order of ``snapshots_by_uniqueid``, so ``--part K/N`` gives each of N
processes a range of its own (``part_runs.py``: the lease, the plan of cuts and the end).
The job's book (``JOB/K/N`` in ``archive_checks``) holds the place after the last instance
the job finished with what the job counted up to there, written every few seconds and
when the job stops (Ctrl-C, or the job saying so): run again, it goes on after that
instance with those counts. A kill loses the counts of the last few seconds, never the
place of what was done: the instances after the last save are met again, and a job's
work on an instance is one it can do twice (retention: what was deleted is gone).

A book belongs to one ``key`` (what the job was asked: retention's policy): a run asked
something else begins again. ``keep_book=False`` walks without a book or a lease (a
preview that nobody resumes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.part_runs import (
    SaveClock,
    book_name,
    finish_part,
    part_bounds,
    part_lease,
    part_plan,
    resumable,
)
from imixs_archive.document.conventions import is_snapshot_id, snapshot_order
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import SNAPSHOTS_BY_UNIQUEID
from imixs_archive.timezones import now_ms

WALK = "instances"


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
    name: str,
    key: str,
    holder: str,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    keep_book: bool = True,
    seen: Callable[[], None] | None = None,
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
    books = CheckBooks(backend)
    with part_lease(books, name, part, parts, holder) as renew:
        plan = part_plan(backend, books, name, {WALK: SNAPSHOTS_BY_UNIQUEID}, parts)
        book = book_name(name, part, parts)
        lower, upper = part_bounds(plan, WALK, part, parts)
        after, resumed = lower, ""
        saved = None if restart else books.read(book)
        if saved is not None and resumable(saved, plan) and saved.get("key") == key:
            job.restore(saved["job"])
            after, resumed = saved.get("after"), f"after {saved.get('instances', 0):,} instances"
        met = int(saved.get("instances", 0)) if resumed and saved is not None else 0
        clock = SaveClock()

        def save(place: Position | None) -> None:
            state = {"plan": plan["id"], "key": key, "after": place, "instances": met}
            books.write(book, {**state, "job": job.saved(), "saved": now_ms()})
            renew()

        place = after
        try:
            for at, ids in instances_in_range(backend, after, upper):
                going_on = job.visit(ids)
                place, met = at, met + 1
                if seen is not None:
                    seen()
                if not going_on:
                    save(place)
                    return InstanceRun(False, resumed)
                if clock.due():
                    save(place)
        except KeyboardInterrupt:
            save(place)  # after the last instance finished: the next run goes on there
            raise
        finish_part(books, name, plan, part, parts)
    return InstanceRun(True, resumed)


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
