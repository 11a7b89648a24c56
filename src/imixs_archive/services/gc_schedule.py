"""The garbage collection ``serve`` runs every ``ARCHIVE_GC_INTERVAL`` seconds (the same
``filestore/gc.py`` collection as ``imixs-archive gc``, whole and without a book: a
stopped one runs again an interval later). Safe in every replica at once, and beside a
``gc --part K/N``: a collection needs no lock and cannot race an ingest."""

from __future__ import annotations

import logging

from imixs_archive.config import Settings
from imixs_archive.filestore.gc import GcReport
from imixs_archive.filestore.store import FileStore
from imixs_archive.periodic import Schedule

log = logging.getLogger(__name__)


class GcSchedule(Schedule[GcReport]):
    """Collects every ``interval`` seconds, the first time after one interval."""

    name = "gc"
    failing = "garbage collection failed"

    def __init__(self, files: FileStore, settings: Settings) -> None:
        super().__init__(settings.gc_interval)
        self.files = files
        self.grace = settings.gc_grace

    def work(self) -> GcReport:
        report = self.files.collect(grace=self.grace)
        for line in report.lines(self.grace):
            log.info("garbage collection: %s", line)
        for error in report.errors:
            log.warning("garbage collection: %s", error)
        return report
