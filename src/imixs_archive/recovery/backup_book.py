"""What a backup counts, and the book of a backup of everything that stops and goes on.

A backup of everything (no ``--from`` / ``--to``) walks the process instances in the
store's range order (``archive/instance_runs.py``), so ``--part K/N`` gives each of N
processes a range of its own and a stopped run (Ctrl-C, a kill, ``serve`` stopping the
job) goes on after the last instance it had finished: the book ``backup.<digest>/K/N`` in
``archive_checks`` (one per target folder and kind of backup) holds that place and what
the run counted up to it.

The files are written out of order (by worker processes, each file made durable and
renamed on a thread of its own: ``backup.py``), so the place trails the walk: an instance
counts as done once each of its snapshots is settled (its file durably in place, found
current, or failed), and the place is the last instance before the first that is not.
A run that goes on meets the instances after the place again, some of them done already:
their files are current (not written again), and counted as such by the run that goes on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.instance_runs import OpenRun
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Position
from imixs_archive.tallies import CopyFailures, add_up

LISTED = 1_000
"""Failures a book keeps by name (it counts them all)."""


@dataclass
class BackupSummary(CopyFailures, Jsonable):
    JSON_NULL_IF_EMPTY = ("resumed",)

    written: int = 0
    current: int = 0
    failed: int = 0
    bytes_written: int = 0
    failures: list[str] = field(default_factory=list)
    corrupt: int = 0
    """Of the failed: stored bytes that did not check out (an IntegrityError)."""
    resumed: str = ""
    """Where a backup of everything went on from ('' when it began)."""

    def merge(self, other: BackupSummary) -> None:
        add_up(self, other)

    def saved(self) -> dict[str, Any]:
        """As a book keeps it (the first ``LISTED`` failures)."""
        counts = {name: getattr(self, name) for name in _COUNTS}
        return {**counts, "failures": self.failures[:LISTED]}

    def words(self, target: str) -> str:
        """The run's final message."""
        return (
            f"{self.written} written, {self.current} already current, {self.failed} failed, "
            f"to {target}"
        )

    def result(self, target: str, listed: int) -> dict[str, Any]:
        """What the run did, as a job's result and the store's record keep it (the first
        ``listed`` failures)."""
        counts = {name: getattr(self, name) for name in _COUNTS if name != "corrupt"}
        return {"target": target, **counts, "failures": self.failures[:listed]}

    @classmethod
    def restored(cls, saved: dict[str, Any]) -> BackupSummary:
        found = cls()
        for name in _COUNTS:
            setattr(found, name, int(saved.get(name, 0)))
        found.failures = [str(f) for f in saved.get("failures", [])]
        return found


_COUNTS = ("written", "current", "failed", "bytes_written", "corrupt")


class Tally:
    """What a backup counts, snapshot by snapshot, in any order (a backup of a range)."""

    def __init__(self) -> None:
        self.summary = BackupSummary()

    def settle(self, snapshot_id: str, outcome: BackupSummary) -> None:
        """One snapshot is done with: its file in place, current or failed."""
        self.summary.merge(outcome)

    def total(self) -> BackupSummary:
        return self.summary


@dataclass
class _Instance:
    position: Position
    outstanding: int
    summary: BackupSummary = field(default_factory=BackupSummary)


class BackupBook(Tally):
    """The book of a backup of everything (part ``K/N``): the instances handed out, in
    walk order, each done once its snapshots are settled; the place after the done ones
    saved every few seconds (and by :meth:`save` when the run stops)."""

    def __init__(self, run: OpenRun) -> None:
        super().__init__()
        self.run = run
        self.before = BackupSummary.restored(run.saved) if run.saved is not None else None
        """What the runs this one goes on from counted."""
        self._done = BackupSummary()
        """Counted up to the place: the instances before the first not done."""
        if self.before is not None:
            self._done.merge(self.before)
        self._place = run.start()
        self._queue: deque[_Instance] = deque()
        self._owner: dict[str, _Instance] = {}

    def instances(self) -> Iterator[tuple[Position, list[str]]]:
        return self.run.instances()

    def hand_out(self, position: Position, ids: list[str]) -> list[str]:
        """An instance's snapshots to write (none: done at once)."""
        instance = _Instance(position, len(ids))
        self._queue.append(instance)
        for snapshot_id in ids:
            self._owner[snapshot_id] = instance
        self._advance()
        return ids

    def settle(self, snapshot_id: str, outcome: BackupSummary) -> None:
        self.summary.merge(outcome)
        instance = self._owner.pop(snapshot_id, None)
        if instance is None:
            return
        instance.summary.merge(outcome)
        instance.outstanding -= 1
        self._advance()

    def _advance(self) -> None:
        while self._queue and self._queue[0].outstanding <= 0:
            instance = self._queue.popleft()
            self._done.merge(instance.summary)
            self._place, self.run.met = instance.position, self.run.met + 1
        if self.run.clock.due():
            self.save()

    def save(self) -> None:
        """The place after the instances done, and what they counted."""
        self.run.save_job(self._place, self._done.saved())

    def total(self) -> BackupSummary:
        """What this run counted, with what the runs it goes on from counted."""
        whole = BackupSummary(resumed=self.run.resumed)
        if self.before is not None:
            whole.merge(self.before)
        whole.merge(self.summary)
        return whole
