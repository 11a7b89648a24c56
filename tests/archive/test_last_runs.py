"""The store keeps the last run of ``verify`` and ``backup``, whichever process ran it: the
one that ended last, whatever order the records arrive in (two processes ending at
once); a damaged record reads as none (``archive/last_runs.py``)."""

from __future__ import annotations

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.last_runs import PREFIX, LastRun
from imixs_archive.archive.snapshots import Archive


def test_the_run_that_ended_last_is_kept(archive: Archive) -> None:
    assert archive.runs.get("verify") is None
    later = LastRun("verify", 1000, 5000, True, "checked", None, {"problem_count": 0}, "b")
    earlier = LastRun("verify", 900, 4000, False, "", "store gone", {}, "a")
    archive.runs.record(later)
    archive.runs.record(earlier)  # arrives last, ended first: not kept
    assert archive.runs.get("verify") == later
    newest = LastRun("verify", 6000, 7000, True, "checked", None, {"problem_count": 2}, "c")
    archive.runs.record(newest)
    assert archive.runs.get("verify") == newest
    assert archive.runs.get("backup") is None  # each job its own


def test_a_damaged_record_reads_as_none_and_is_replaced(archive: Archive) -> None:
    CheckBooks(archive.backend).write(PREFIX + "backup", {"finished": "soon"})
    assert archive.runs.get("backup") is None
    run = LastRun("backup", 1, 2, True, "3 written", None, {"written": 3}, "cron")
    archive.runs.record(run)
    assert archive.runs.get("backup") == run
