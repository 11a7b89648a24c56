"""A whole ``verify`` that stops and goes on, alone or split into parts.

A run walks the tables of ``verify.py`` one after the other, each in the store's range
order, and records every few seconds where it stands with what it found so far (the
``verify/K/N`` book of ``archive_checks``): a run stopped by Ctrl-C, a kill or a lost
store goes on there when ``verify`` is run again, as ``ledger verify`` does (``--restart``
begins again). What it found before it stopped is kept with the place, so the report at
the end is the one an unstopped run gives.

``--part K/N`` splits each table into N ranges (the token ring on Cassandra, the key
space on SQLite), cut once for all N parts (the ``verify-plan/N`` book, written by the
first part to start): N processes, on one machine or several, each verifying its part,
together check every row once. Each part is a run of its own (it stops and goes on alone);
the last part to finish removes the plan (lease, plan and books: ``part_runs.py``). Only
part 1 reports the store's own findings and checks its file (``store_damage.py``), and
what needs the whole archive (the bytes ``gc`` would free) only a verify in one part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from imixs_archive.archive.part_runs import PartDone, PartRun
from imixs_archive.archive.verify import (
    WALKS,
    Progress,
    Walk,
    finish,
    start_whole,
    walk_range,
)
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.storage.base import Backend, Position
from imixs_archive.timezones import now_ms

JOB = "verify"


VerifyRun = PartDone[VerifyReport]
"""A finished verify (or part of one): its report, and where it went on from."""


class VerifyAsked(TypedDict, total=False):
    """What a verify is asked beyond its part and walks (:func:`verify_part`'s keywords),
    handed on by the doors above it."""

    restart: bool
    full: bool
    progress: Progress | None
    on_resumed: Callable[[dict[str, int]], None] | None
    """Told, when the run goes on where a stopped one stood, what that one checked (by
    what a partition is: snapshots, files, pieces), so a progress bar begins there."""


def verify_part(
    backend: Backend,
    *,
    holder: str,
    part: int = 1,
    parts: int = 1,
    restart: bool = False,
    full: bool = False,
    progress: Progress | None = None,
    walks: Sequence[Walk] | None = None,
    on_resumed: Callable[[dict[str, int]], None] | None = None,
) -> VerifyRun:
    """Verify part ``part`` of ``parts`` (1 of 1: everything), going on where an unfinished
    run of it stopped unless ``restart``. BusyError when another process runs this part.
    ``full``: part 1 checks the store's file thoroughly (SQLite's ``integrity_check``, which
    compares every index of the file with its table) instead of quickly; ``walks``: those
    of ``verify.WALKS`` and of the layers above (``verify.verify``)."""
    began = time.monotonic()
    walks = tuple(walks or WALKS)
    tables = {walk.name: walk.table for walk in walks}
    with PartRun.held(backend, JOB, tables, holder=holder, part=part, parts=parts) as run:
        report, resumed = _taken_up(backend, run, restart, full)
        if resumed and on_resumed is not None:
            on_resumed(
                {"snapshots": report.snapshots, "files": report.files, "pieces": report.pieces}
            )
        _walk(run, report, progress, walks)
        finish(backend, report, whole=parts == 1)
        run.finish()
    return VerifyRun(report, part, parts, resumed, time.monotonic() - began)


def _taken_up(
    backend: Backend, run: PartRun, restart: bool, full: bool
) -> tuple[VerifyReport, str]:
    """The report of the stopped run this one goes on from, and where it stood; else a
    new one (part 1 begins with the store's own findings)."""
    run.take_up(restart)
    if run.found is not None:
        report = VerifyReport.restored(run.found["report"])
        checked = report.snapshots + report.files + report.pieces
        return report, f"{run.where()}, after {checked:,} snapshots, files and pieces"
    report = VerifyReport()
    if run.part == 1:
        start_whole(backend, report, full=full)
    return report, ""


def _walk(
    run: PartRun, report: VerifyReport, progress: Progress | None, walks: Sequence[Walk]
) -> None:
    started = int(run.found.get("started", now_ms())) if run.found is not None else now_ms()

    def state() -> dict[str, Any]:
        return {"report": report.saved(), "started": started}

    def done(at: Position) -> None:
        if progress is not None and walks[run.walk].counts:
            progress(walks[run.walk].counts)
        if run.passed(at):
            report.settle(wait=True)  # what was found before the place is saved
            run.save(state())

    # Saved only between two partitions, where the report and the place agree: a stop
    # (Ctrl-C, a kill) in the middle of one goes on from the last save, that partition
    # and those after it checked again, none counted twice.
    for walk, after, upto in run.ranges(state):
        walk_range(run.backend, walks[walk], after, upto, report, done)
