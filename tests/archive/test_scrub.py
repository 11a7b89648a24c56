"""The scrub (``archive/scrub.py``) on every backend: slices paced by a clock cover the whole
archive within the period, each partition in one slice of a cycle; a corrupted piece is
found by the slice that covers it and stays a finding until a slice checks its place again;
coverage and the last cycle are recorded; one process scrubs at a time."""

from __future__ import annotations

import threading
import time

from tests.archive.verify_fill import corrupt_a_piece, fill

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.scrub import LEASE, ScrubReport, scrub_slice, scrub_status
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import DOCUMENTS_DATA

DAY = 86_400.0
T0 = 1_790_000_000_000


class Clock:
    def __init__(self) -> None:
        self.ms = T0

    def __call__(self) -> int:
        return self.ms

    def days(self, count: float) -> None:
        self.ms += int(count * DAY * 1000)


def _slice(backend: Backend, clock: Clock, holder: str = "test@here:1:a") -> ScrubReport:
    return scrub_slice(backend, period=10 * DAY, interval=DAY, holder=holder, now=clock)


def test_daily_slices_cover_the_archive_within_the_period(
    archive: Archive, backend: Backend
) -> None:
    fill(archive)
    whole = archive.verify_part().report
    data_id = corrupt_a_piece(backend)
    clock = Clock()
    slices = []
    while not (slices and slices[-1].cycle_finished):
        slices.append(_slice(backend, clock))
        clock.days(1)
        assert len(slices) <= 10  # the cycle ends within the period
    assert len(slices) == 10
    assert sum(s.snapshots for s in slices) == whole.snapshots
    assert sum(s.files for s in slices) == whole.files
    assert sum(s.pieces for s in slices) == whole.pieces
    assert all(s.share_to > s.share_from for s in slices)
    found = [s for s in slices if any(data_id in p for p in s.problems)]
    assert found, "the slice covering the corrupted piece names it"
    status = scrub_status(backend, 10 * DAY, at=clock())
    assert status["last_cycle"]["finished"] == clock() - int(DAY * 1000)
    assert status["covered_share"] == 1.0
    assert status["finding_count"] >= 1
    assert any(data_id in f["text"] for f in status["findings"])
    assert status["cycle"] == 2 and status["cycle_share"] == 0.0


def test_a_finding_goes_when_its_place_is_checked_again_and_is_sound(
    archive: Archive, backend: Backend
) -> None:
    fill(archive, instances=10)
    good = {row["data_id"]: row for row in backend.scan(DOCUMENTS_DATA)}
    data_id = corrupt_a_piece(backend)
    clock = Clock()
    for _ in range(10):
        _slice(backend, clock)
        clock.days(1)
    assert scrub_status(backend, 10 * DAY, at=clock())["finding_count"] >= 1
    backend.put(DOCUMENTS_DATA, [good[data_id]])  # repaired (from a backup, say)
    for _ in range(10):
        _slice(backend, clock)
        clock.days(1)
    status = scrub_status(backend, 10 * DAY, at=clock())
    assert status["finding_count"] == 0, status["findings"]
    assert status["last_cycle"]["cycle"] == 2 and status["last_cycle"]["problems"] == 0


def test_coverage_falls_when_the_scrub_stops(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=5)
    clock = Clock()
    for _ in range(10):
        _slice(backend, clock)
        clock.days(1)
    assert scrub_status(backend, 10 * DAY, at=clock())["covered_share"] == 1.0
    clock.days(5)  # no slice for five days: what was checked first is out of the period
    share = scrub_status(backend, 10 * DAY, at=clock())["covered_share"]
    assert 0.3 < share < 0.8


def test_a_missed_slice_is_caught_up(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=5)
    clock = Clock()
    _slice(backend, clock)
    clock.days(4)
    caught_up = _slice(backend, clock)
    assert abs(caught_up.share_to - 0.5) < 1e-9  # four days late plus one ahead, of ten


def test_one_process_scrubs_at_a_time(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=2)
    assert CheckBooks(backend).take_lease(LEASE, "other@elsewhere:1:b", 60_000) == ""
    report = _slice(backend, Clock())
    assert report.busy and "other@elsewhere" in report.busy and report.snapshots == 0
    assert scrub_status(backend, 10 * DAY)["started"] is False


def test_a_stopped_slice_goes_on_where_it_stood(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=20)
    clock = Clock()
    stop = threading.Event()
    stop.set()  # asked to stop from the first partition on
    first = scrub_slice(
        backend, period=2 * DAY, interval=DAY, holder="a@h:1:c", stop=stop, now=clock
    )
    assert first.stopped and first.pieces == 1 and first.share_to == 0.0
    rest = _slice(backend, clock)  # the pieces' walk goes on after the first piece
    whole = archive.verify_part().report
    assert not rest.stopped
    assert first.pieces + rest.pieces + _finish(backend, clock) == whole.pieces


def _finish(backend: Backend, clock: Clock) -> int:
    pieces = 0
    while True:
        clock.days(1)
        report = _slice(backend, clock)
        pieces += report.pieces
        if report.cycle_finished:
            return pieces


def test_two_processes_at_once_scrub_one_slice(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=10)
    clock = Clock()
    reports: list[ScrubReport] = []

    def slow() -> None:  # 200 KB a second: the slice takes a few seconds
        reports.append(
            scrub_slice(
                backend, period=DAY, interval=DAY, holder="a@one:1:a", rate=200_000, now=clock
            )
        )

    thread = threading.Thread(target=slow)
    thread.start()
    deadline = time.monotonic() + 60  # (it was 5 s for the thread to take it)
    while CheckBooks(backend).text(LEASE) is None:
        assert time.monotonic() < deadline, "the slow slice took no lease"
        threading.Event().wait(0.01)
    other = scrub_slice(backend, period=DAY, interval=DAY, holder="b@two:2:b", now=clock)
    thread.join(60)
    assert other.busy and "a@one" in other.busy and other.pieces == 0
    assert reports and reports[0].cycle_finished and not reports[0].busy
    assert reports[0].seconds >= 1.0  # it kept to its rate
