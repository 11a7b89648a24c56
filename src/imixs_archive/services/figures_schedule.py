"""What ``serve`` keeps counted in the background, so that no view waits for a count:
every ``EVERY`` seconds the whole-archive figures (the days changed since, from their
facts: ``analytics/archive_figures.py``; the caller's ``refresh`` keeps the result for
the pages), and the store's census once it is older than ``ARCHIVE_CENSUS_INTERVAL``."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from imixs_archive.analytics.day_store import read_census
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import Budget, ClientGoneError, within
from imixs_archive.config import Settings
from imixs_archive.periodic import Schedule
from imixs_archive.services.statistics import take_census

log = logging.getLogger(__name__)

EVERY = 300.0


class FiguresSchedule(Schedule[None]):
    name = "figures"
    failing = "counting the archive's figures failed (tried again later)"
    at_once = True

    def __init__(self, archive: Archive, settings: Settings, refresh: Callable[[], object]) -> None:
        super().__init__(EVERY)
        self.archive = archive
        self.census_interval = settings.census_interval
        self._refresh = refresh
        self._stopping = Budget(None)
        """Cancelled by :meth:`close`: a census under way stops between two rows."""

    def work(self) -> None:
        """The census when due, then the figures; either stops between two reads when
        serve does (a first count of a large store takes minutes), counted again at the
        next start."""
        try:
            with within(self._stopping):
                if self.census_due(dt.datetime.now(dt.UTC)):  # first: the figures carry it
                    stats = take_census(self.archive)
                    log.info(
                        "store census: %d pieces, %d bytes stored, %d bytes reclaimable",
                        stats.pieces,
                        stats.stored_bytes,
                        stats.reclaimable_bytes,
                    )
                self._refresh()
        except ClientGoneError:
            return  # serve is stopping

    def census_due(self, now: dt.datetime) -> bool:
        if self.census_interval <= 0:
            return False
        census = read_census(self.archive)
        return census is None or (now - census[1]).total_seconds() >= self.census_interval

    def close(self, timeout: float = 30.0) -> None:
        self._stopping.cancel("serve is stopping")
        super().close(timeout)
