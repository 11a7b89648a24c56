"""A ``gc`` that stops and goes on, alone or split into parts.

A run walks the tables of the collector (``filestore/gc.py``: :data:`WALKS`, first the
list, then what it lists) one after the other, each in the store's range order, and
records every few seconds where it stands with what it counted so far (the ``gc/K/N``
book of ``archive_checks``; a dry run's is ``gc-dry-run/K/N``): a run stopped by Ctrl-C,
a kill or a lost store goes on there when ``gc`` is run again (``--restart`` begins
again). The book is written between two partitions, where the counts and the place agree;
a stop in the middle of one walks that partition again: what was removed is gone, what was
listed is found listed, so nothing is removed or listed twice (the counts of the last few
seconds before a kill may be lost).

``--part K/N`` splits each table into N ranges (the token ring on Cassandra, the key
space on SQLite), cut once for all N parts (``gc-plan/N``, written by the first part to
start; lease, plan and books: ``part_runs.py``): part K removes what is due in its share
of the list and lists what is unused in its share of each table, so the N parts, on one
machine or several, together do what one collection does. Each part builds in full what
needs a whole table: the Bloom filters of the Java pieces ``documents`` lists and of the
snapshot ids ``snapshots_by_uniqueid`` names (``gc_java.py``). What needs the whole
archive (what is unused after the run) only a run in one part counts.

Nothing of the collector's safety changes: a run takes its time of "due" when it begins
(a run that goes on takes a new one), builds the filter of listed Java pieces after it,
and removes an item only with the re-checks of ``gc.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any, NotRequired, TypedDict

from imixs_archive.archive.part_runs import PartDone, PartRun
from imixs_archive.filestore.garbage import now_us
from imixs_archive.filestore.gc import (
    CLOCK_SKEW_US,
    WALKS,
    GcPass,
    GcReport,
    finish_whole,
    walk_range,
)
from imixs_archive.storage.base import Backend, Position

JOB = "gc"
DRY_JOB = "gc-dry-run"

Progress = Callable[[str], None]
"""Called after each partition walked, with the walk's name."""


class GcAsked(TypedDict):
    """What a collection is asked beyond its part (:func:`gc_part`'s keywords)."""

    grace: float
    dry_run: NotRequired[bool]
    restart: NotRequired[bool]
    progress: NotRequired[Progress | None]


class GcRun(PartDone[GcReport]):
    """A finished collection (or part of one): its report, and where it went on from."""

    def to_json(self) -> dict[str, Any]:
        """The report as ``gc --json`` prints it, with the part and where it went on."""
        return {
            **self.report.to_json(),
            "part": self.part,
            "parts": self.parts,
            "resumed": self.resumed or None,
            "seconds": round(self.seconds, 3),
        }


def gc_part(
    backend: Backend,
    *,
    holder: str,
    grace: float,
    dry_run: bool = False,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    progress: Progress | None = None,
    clock: Callable[[], int] = now_us,
    clock_skew_us: int = CLOCK_SKEW_US,
) -> GcRun:
    """Collect part ``part`` of ``parts`` (1 of 1: everything), going on where an
    unfinished run of it stopped unless ``restart``. BusyError when another process runs
    this part. ``clock`` and ``clock_skew_us`` as :func:`gc.collect`'s."""
    job = DRY_JOB if dry_run else JOB
    began = time.monotonic()
    tables = {walk.name: walk.table for walk in WALKS}
    with PartRun.held(backend, job, tables, holder=holder, part=part, parts=parts) as run:
        run.take_up(restart)
        report, resumed, partitions = None, "", 0
        if run.found is not None:
            report = _restored(run.found["report"])
            partitions = int(run.found.get("partitions", 0))
            resumed = f"{run.where()}, after {partitions:,} partitions"
        gc = GcPass.begin(
            backend, grace, dry_run, clock, clock_skew_us, report, removes=run.walk <= _PIECES
        )
        _walk(run, gc, partitions, progress)
        if parts == 1:
            finish_whole(backend, gc.report)
        run.finish()
    return GcRun(gc.report, part, parts, resumed, time.monotonic() - began)


_PIECES = next(k for k, walk in enumerate(WALKS) if walk.name == "pieces")
"""The last walk that needs the filter of listed Java pieces."""


def _walk(run: PartRun, gc: GcPass, partitions: int, progress: Progress | None) -> None:
    """The walks left, the book saved with the report as of the last partition done."""
    counted: dict[str, Any] = {"partitions": partitions, "report": _saved(gc.report)}

    def done(at: Position) -> None:
        counted["partitions"] += 1
        counted["report"] = _saved(gc.report)
        if run.passed(at):
            run.save(counted)
        if progress is not None:
            progress(WALKS[run.walk].name)

    try:
        for walk, after, upto in run.ranges(lambda: counted):
            walk_range(run.backend, WALKS[walk], after, upto, gc, done)
            counted["report"] = _saved(gc.report)
    except KeyboardInterrupt:
        run.save(counted)  # after the last partition done: goes on there
        raise


def _saved(report: GcReport) -> dict[str, Any]:
    return {f.name: getattr(report, f.name) for f in fields(report)} | {
        "errors": list(report.errors)
    }


def _restored(saved: dict[str, Any]) -> GcReport:
    names = {f.name for f in fields(GcReport)}
    return GcReport(**{name: value for name, value in saved.items() if name in names})
