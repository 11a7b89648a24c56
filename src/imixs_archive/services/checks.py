"""``verify`` and the scrub as every entry point runs them (the CLI, the web API's job,
``serve``'s scrub, ``copy-store --verify``): the archive's own walks (``archive/verify.py``,
``archive/derived_checks.py``) and the kept figures' (``analytics/figure_checks.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Unpack

from imixs_archive.analytics.figure_checks import figure_walks
from imixs_archive.archive.scrub import ScrubReport
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.archive.verify_runs import VerifyAsked, VerifyRun


def verify_run(
    archive: Archive, part: int = 1, parts: int = 1, **asked: Unpack[VerifyAsked]
) -> VerifyRun:
    """A verify (or part ``part`` of ``parts``) that goes on where a stopped one ended
    (``archive/verify_runs.py``)."""
    return archive.verify_part(part, parts, checks=figure_walks(archive), **asked)


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
