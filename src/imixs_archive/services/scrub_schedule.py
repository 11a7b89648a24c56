"""The scrub ``serve`` runs every ``ARCHIVE_SCRUB_INTERVAL`` (``archive/scrub.py``): a slice of
the archive read again and checked each time, paced so that a cycle covers everything
within ``ARCHIVE_SCRUB_PERIOD``, read at ``ARCHIVE_SCRUB_RATE`` at most. Safe in every
replica at once: one holds the scrub's lease and checks the slice, the others skip their
turn. Closing stops a slice between two partitions; the next goes on there."""

from __future__ import annotations

import logging

from imixs_archive.archive.scrub import ScrubReport
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.periodic import Schedule
from imixs_archive.services.checks import scrub_once

log = logging.getLogger(__name__)


class ScrubSchedule(Schedule[ScrubReport]):
    name = "scrub"
    failing = "scrub: slice failed"

    def __init__(self, archive: Archive, settings: Settings) -> None:
        super().__init__(settings.scrub_interval)
        self.archive = archive
        self.period = settings.scrub_period
        self.rate = settings.scrub_rate

    def work(self) -> ScrubReport:
        report = scrub_once(
            self.archive, period=self.period, interval=self.interval, rate=self.rate, stop=self.stop
        )
        if report.busy:
            log.info("scrub: %s", report.busy)
            return report
        log.info(
            "scrub: cycle %d at %.2f%% (%d snapshots, %d files, %d pieces checked, %d problems)",
            report.cycle,
            report.share_to * 100,
            report.snapshots,
            report.files,
            report.pieces,
            report.problem_count,
        )
        for problem in report.problems:
            log.warning("scrub: %s", problem)
        return report
