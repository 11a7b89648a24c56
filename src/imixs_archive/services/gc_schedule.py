"""The garbage collection ``serve`` runs every ``ARCHIVE_GC_INTERVAL`` seconds (the same
``filestore/gc.py`` collection as ``imixs-archive gc``, whole and without a book: a
stopped one runs again an interval later). Safe in every replica at once, and beside a
``gc --part K/N``: a collection needs no lock and cannot race an ingest."""

from __future__ import annotations

import logging

from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError
from imixs_archive.filestore.gc import GcReport
from imixs_archive.filestore.store import FileStore
from imixs_archive.periodic import Periodic

log = logging.getLogger(__name__)


class GcSchedule:
    """A thread that collects every ``interval`` seconds, the first time after one
    interval, until :meth:`close`."""

    def __init__(self, files: FileStore, settings: Settings) -> None:
        self.files = files
        self.interval = settings.gc_interval
        self.grace = settings.gc_grace
        self.last: GcReport | None = None
        self.runs = 0
        self._loop = Periodic("gc", self.interval, self._run)

    def start(self) -> None:
        if self.interval > 0:
            self._loop.start()

    def run_once(self) -> GcReport | None:
        try:
            report = self.files.collect(grace=self.grace)
        except ArchiveError as exc:  # the store went away: the next run tries again
            log.warning("garbage collection failed: %s", exc)
            return None
        self.last, self.runs = report, self.runs + 1
        log.info(
            "garbage collection: removed %d files, %d pieces (%d bytes); listed %d files, "
            "%d pieces",
            report.removed_files,
            report.removed_pieces,
            report.bytes_freed,
            report.listed_files,
            report.listed_pieces,
        )
        if (
            report.java_pieces_found
            or report.dangling_refs_found
            or report.empty_refs_removed
            or report.stale_piece_refs_found
        ):
            log.info(
                "garbage collection beside Java: %d unlisted Java pieces found (%d removed, "
                "%d bytes), %d references from gone snapshots found (%d removed), %d "
                "references to the empty file removed, %d references of pieces their file "
                "no longer lists found (%d removed)",
                report.java_pieces_found,
                report.java_pieces_removed,
                report.java_bytes_freed,
                report.dangling_refs_found,
                report.dangling_refs_removed,
                report.empty_refs_removed,
                report.stale_piece_refs_found,
                report.stale_piece_refs_removed,
            )
        for error in report.errors:
            log.warning("garbage collection: %s", error)
        return report

    def _run(self) -> None:
        self.run_once()

    def close(self) -> None:
        self._loop.close()
