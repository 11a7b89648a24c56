"""A whole verify that stops and goes on, and one split into parts (``verify_runs.py``), on
every backend: the parts together check every row once and report what one run reports; a
run stopped by Ctrl-C or killed goes on where it stood and reports what an unstopped run
would, nothing lost and nothing twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from tests.archive.verify_fill import corrupt_a_piece, fill

from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.config import Settings
from imixs_archive.errors import BusyError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_FILES, Table
from support.kills import process_env, run_command, run_killed, stops_at


def _counts(report: VerifyReport) -> tuple[int, int, int, int]:
    return report.snapshots, report.files, report.pieces, report.unverified


def test_parts_together_check_what_one_run_checks(archive: Archive, backend: Backend) -> None:
    fill(archive)
    data_id = corrupt_a_piece(backend)
    whole = archive.verify_part().report
    assert whole.snapshots == 120 and whole.files == 40 and not whole.ok
    assert any(data_id in problem for problem in whole.problems)
    for parts in (2, 3):
        reports = [archive.verify_part(k, parts).report for k in range(1, parts + 1)]
        summed = [sum(values) for values in zip(*map(_counts, reports), strict=True)]
        assert tuple(summed) == _counts(whole)
        problems = sorted(p for r in reports for p in r.problems)
        assert problems == sorted(whole.problems)
        assert all(r.snapshots for r in reports)  # each part did a share
        # the plan and the parts' books are gone once every part finished
        assert not [n for n in _books(archive) if n.startswith(("verify/", "verify-plan"))]


def _books(archive: Archive) -> list[str]:
    return CheckBooks(archive.backend).names("")


def test_a_stopped_run_goes_on_and_reports_what_an_unstopped_one_does(
    archive: Archive, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(archive)
    corrupt_a_piece(backend)
    whole = archive.verify_part().report
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    with pytest.raises(KeyboardInterrupt):  # in the snapshots' walk, past the pieces
        archive.verify_part(progress=stops_at(130))
    run = archive.verify_part()
    assert run.resumed.startswith("snapshots")
    assert _counts(run.report) == _counts(whole)
    assert sorted(run.report.problems) == sorted(whole.problems)
    assert run.report.reclaimable_bytes == whole.reclaimable_bytes
    assert archive.verify_part().resumed == ""  # finished: the next one begins


def test_restart_begins_again(archive: Archive, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(archive, instances=5)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    with pytest.raises(KeyboardInterrupt):
        archive.verify_part(progress=stops_at())
    run = archive.verify_part(restart=True)
    assert run.resumed == "" and run.report.snapshots == 15


def test_one_part_at_a_time(archive: Archive, backend: Backend) -> None:
    fill(archive, instances=2)
    other = Archive(backend)
    assert CheckBooks(backend).take_lease("verify-lease/1/1", "someone else", 60_000) == ""
    with pytest.raises(BusyError, match="another process"):
        other.verify_part()
    assert archive.verify_part(1, 2).report.ok  # another part is free


KILLED = """
with open_archive(load_settings(dict(os.environ))) as archive:
    archive.verify_part(progress=step)
"""


def test_a_killed_verify_goes_on_where_it_stood(
    archive: Archive, backend: Backend, store_settings: Settings
) -> None:
    fill(archive)
    data_id = corrupt_a_piece(backend, seed=7)
    whole = archive.verify_part().report
    env = process_env(store_settings)
    run_killed(KILLED, env=env, at=150)
    resumed = run_command("verify", env=env)
    assert resumed.returncode == 5, resumed.stderr
    assert "went on from snapshots" in resumed.stdout
    assert f"checked {whole.snapshots} snapshots" in resumed.stdout
    assert f"{whole.files} files, {whole.pieces} pieces" in resumed.stdout
    named = [line for line in resumed.stdout.splitlines() if line.startswith("PROBLEM")]
    assert sorted(named) == sorted(f"PROBLEM: {p}" for p in whole.problems)
    assert any(data_id in line for line in named)


class _StopsAtARead(DelegatingBackend):
    """Ctrl-C in the middle of a partition's check: at the n-th read of an archive_files
    row (a snapshot's file looked for)."""

    def __init__(self, inner: Backend, reads: int) -> None:
        super().__init__(inner)
        self.reads = reads

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        if table is ARCHIVE_FILES:
            self.reads -= 1
            if self.reads == 0:
                raise KeyboardInterrupt
        return self.inner.get(table, key, columns)


def test_stopped_inside_a_partition_nothing_counts_twice(
    archive: Archive, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(archive)
    corrupt_a_piece(backend, seed=3)
    whole = archive.verify_part().report
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    stopping = Archive(_StopsAtARead(backend, reads=25))  # inside a snapshot's check
    with pytest.raises(KeyboardInterrupt):
        stopping.verify_part()
    run = archive.verify_part()
    assert run.resumed.startswith("snapshots")
    assert _counts(run.report) == _counts(whole)
    assert sorted(run.report.problems) == sorted(whole.problems)
