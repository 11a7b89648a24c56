"""``verify`` and the scrub as every entry point runs them (the CLI, the web API's job,
``serve``'s scrub, ``copy-store --verify``): the archive's own walks (``archive/verify.py``,
``archive/derived_checks.py``) and the kept figures' (``analytics/figure_checks.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Unpack

from imixs_archive.analytics.figure_checks import figure_walks
from imixs_archive.archive.scrub import ScrubReport
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.archive.verify_runs import VerifyAsked, VerifyRun
from imixs_archive.services.job_runs import recorded
from imixs_archive.services.jobs import MAX_LISTED


def verify_run(
    archive: Archive, part: int = 1, parts: int = 1, **asked: Unpack[VerifyAsked]
) -> VerifyRun:
    """A verify (or part ``part`` of ``parts``) that goes on where a stopped one ended
    (``archive/verify_runs.py``), recorded as the last verify (``job_runs.py``)."""
    with recorded(archive, "verify") as outcome:
        run = archive.verify_part(part, parts, checks=figure_walks(archive), **asked)
        outcome.ok, outcome.message = run.report.ok, verify_words(run.report)
        outcome.result = verify_result(run.report)
        if parts > 1:
            outcome.message = f"part {part} of {parts}: {outcome.message}"
            outcome.result.update(part=part, parts=parts)
    return run


def verify_once(
    archive: Archive, progress: Callable[[str], None] | None = None, *, record: bool = False
) -> VerifyReport:
    """A whole verify that remembers nothing (a job of the web API, a copy just taken);
    ``record``: recorded as the last verify of the archive (the job)."""
    if not record:
        return archive.verify(progress, checks=figure_walks(archive))
    with recorded(archive, "verify") as outcome:
        report = archive.verify(progress, checks=figure_walks(archive))
        outcome.ok, outcome.message = report.ok, verify_words(report)
        outcome.result = verify_result(report)
    return report


def verify_result(report: VerifyReport) -> dict[str, Any]:
    """What a verify found, as a job's result and the store's record keep it."""
    return {
        "ok": report.ok,
        "snapshots": report.snapshots,
        "files": report.files,
        "pieces": report.pieces,
        "unverified": report.unverified,
        "sealed": report.sealed,
        "problems": report.problems[:MAX_LISTED],
        "warnings": report.warnings[:MAX_LISTED],
        "problem_count": report.problem_count,
        "warning_count": len(report.warnings) + report.unlisted_warnings,
    }


def verify_words(report: VerifyReport) -> str:
    verdict = "clean" if report.ok else f"{report.problem_count} problems"
    return (
        f"checked {report.snapshots} snapshots, {report.files} files, "
        f"{report.pieces} pieces: {verdict}"
    )


def scrub_once(
    archive: Archive,
    *,
    period: float,
    interval: float,
    rate: float = 0.0,
    stop: threading.Event | None = None,
) -> ScrubReport:
    """The slice of the scrub's cycle due now (``archive/scrub.py``)."""
    return archive.scrub_slice(
        period=period, interval=interval, rate=rate, stop=stop, checks=figure_walks(archive)
    )
