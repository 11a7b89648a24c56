"""``verify`` and the scrub as every entry point runs them (the CLI, the web API's job,
``serve``'s scrub, ``copy-store --verify``): the archive's own walks (``archive/verify.py``,
``archive/derived_checks.py``) and the kept figures' (``analytics/figure_checks.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from imixs_archive.analytics.figure_checks import figure_walks
from imixs_archive.archive.scrub import ScrubReport
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.archive.verify_runs import VerifyRun


def verify_run(
    archive: Archive,
    part: int = 1,
    parts: int = 1,
    *,
    restart: bool = False,
    full: bool = False,
    progress: Callable[[str], None] | None = None,
) -> VerifyRun:
    """A verify (or part ``part`` of ``parts``) that goes on where a stopped one ended
    (``archive/verify_runs.py``)."""
    checks = figure_walks(archive)
    return archive.verify_part(
        part, parts, restart=restart, full=full, progress=progress, checks=checks
    )


def verify_once(archive: Archive, progress: Callable[[str], None] | None = None) -> VerifyReport:
    """A whole verify that remembers nothing (a job of the web API, a copy just taken)."""
    return archive.verify(progress, checks=figure_walks(archive))


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
