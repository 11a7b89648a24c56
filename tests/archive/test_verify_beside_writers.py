"""``verify`` and the scrub beside a writer that stores and deletes (a thread of its own, on
every backend) report only what is wrong: a snapshot deleted while it was being checked is
not missing from its index rows (``archive/rechecks.py``: what disagrees is read again
once the writes under way are over).

The first tests time the writer against the check: right after the check reads a
snapshot's row, the writer deletes that snapshot, all of it (the check goes on once the
delete is done) or half of it (the check goes on while the delete waits before the
snapshot's row, as a slow Cassandra writer does). The last lets a writer store and delete
as fast as it can while whole verifies and scrub slices run, with the kept figures'
checks (``services/checks.py``)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from tests.archive.verify_fill import fill

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.archive.scrub import scrub_slice
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.services.checks import scrub_once, verify_once
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import SNAPSHOTS, Table
from support.snapshots import make_snapshot

ORIGIN = "7b0e3a6d-a0e4-4875-89f1-3b418859abe5"
WRITES = 300
"""At most, for the writer beside: its deletes leave fewer tombstones in a table than the
test node lets a read walk (``scripts/cassandra-node``: 1,000)."""


class Deleter:
    """A thread that deletes the snapshots it is handed, through an archive of its own;
    ``midway``: it lets the caller go on once the delete reached the snapshot's row, and
    waits a little before deleting it."""

    def __init__(self, backend: Backend, *, midway: bool) -> None:
        self.midway = midway
        self.asked: queue.Queue[str | None] = queue.Queue()
        self.going_on = threading.Event()
        self.deleted: list[str] = []
        self.archive = Archive(_Pausing(backend, self))
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def delete(self, snapshot_id: str) -> None:
        """Hand over a snapshot; return when the check may go on."""
        self.going_on.clear()
        self.asked.put(snapshot_id)
        assert self.going_on.wait(30)

    def _run(self) -> None:
        while (snapshot_id := self.asked.get()) is not None:
            self.archive.delete(snapshot_id)
            self.deleted.append(snapshot_id)
            self.going_on.set()

    def close(self) -> None:
        if self.thread.is_alive():
            self.asked.put(None)
            self.thread.join(30)


class _Pausing(DelegatingBackend):
    """The deleter's store: midway, the check goes on before the snapshot's row goes."""

    def __init__(self, inner: Backend, deleter: Deleter) -> None:
        super().__init__(inner)
        self.deleter = deleter

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        if table is SNAPSHOTS and self.deleter.midway:
            self.deleter.going_on.set()
            time.sleep(0.3)
        super().delete(table, key, written_before=written_before)


class Handing(DelegatingBackend):
    """The checker's store: each read of a whole snapshot row of ``chosen`` hands that
    snapshot to the deleter right after it was read."""

    def __init__(self, inner: Backend, deleter: Deleter, chosen: set[str]) -> None:
        super().__init__(inner)
        self.deleter = deleter
        self.chosen = chosen

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        row = super().get(table, key, columns)
        if table is SNAPSHOTS and columns is None and key["snapshot"] in self.chosen:
            self.chosen.discard(key["snapshot"])
            self.deleter.delete(key["snapshot"])
        return row


def _stored(archive: Archive) -> list[str]:
    """A few snapshots with files, the ones the deleter gets."""
    return [
        archive.store(
            make_snapshot(n, origin=ORIGIN, files={f"f{n}.txt": b"x" * (n + 1)})
        ).snapshot_id
        for n in range(4)
    ]


@pytest.fixture(params=["whole", "midway"])
def deleter(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deleter]:
    found = Deleter(backend, midway=request.param == "midway")
    yield found
    found.close()


def test_a_snapshot_deleted_while_verify_checks_it_is_not_missing(
    archive: Archive, backend: Backend, deleter: Deleter
) -> None:
    fill(archive, instances=4)
    chosen = _stored(archive)
    report = verify(Handing(backend, deleter, set(chosen)))
    deleter.close()  # the last delete finished
    assert sorted(deleter.deleted) == sorted(chosen)  # each deleted while it was checked
    assert report.ok, report.problems
    assert not report.warnings, report.warnings


def test_a_snapshot_deleted_while_the_scrub_checks_it_is_no_finding(
    archive: Archive, backend: Backend, deleter: Deleter
) -> None:
    fill(archive, instances=4)
    chosen = _stored(archive)
    slice_ = scrub_slice(
        Handing(backend, deleter, set(chosen)), period=1.0, interval=1.0, holder="t@h:1:a"
    )
    deleter.close()
    assert sorted(deleter.deleted) == sorted(chosen)
    assert slice_.cycle_finished and not slice_.problem_count, slice_.problems


def test_verify_and_the_scrub_beside_a_writer_find_nothing(
    archive: Archive, backend: Backend
) -> None:
    fill(archive, instances=4)
    archive_figures(archive)  # days and months kept, which the writer makes stale
    stop = threading.Event()
    written = [0]

    def write() -> None:  # stores and deletes as fast as it can, in its own archive
        with Archive(backend) as other:
            while not stop.is_set() and written[0] < WRITES:
                n = written[0]
                files = {"a.txt": b"%d" % n, "b.txt": b"shared"}
                origin = f"{n // 4:08x}{ORIGIN[8:]}"  # instances of a few snapshots each
                sid = other.store(make_snapshot(n, origin=origin, files=files)).snapshot_id
                if n % 3:
                    other.delete(sid)
                written[0] += 1

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    reports, slices = [], []
    try:
        while len(reports) < 2 or (written[0] < 60 and writer.is_alive()):
            reports.append(verify_once(archive))
            slices.append(scrub_once(archive, period=1.0, interval=1.0))
    finally:
        stop.set()
        writer.join(60)
    assert written[0] >= 60  # the writer wrote all along
    assert all(r.ok for r in reports), [r.problems for r in reports]
    assert not any(s.problem_count for s in slices), [s.problems for s in slices]
