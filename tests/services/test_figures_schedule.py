"""What ``serve`` keeps counted in the background: the figures, and the store's census
once it is older than ``ARCHIVE_CENSUS_INTERVAL``."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.analytics.day_store import read_census
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.services.figures_schedule import FiguresSchedule
from imixs_archive.services.statistics import archive_stats
from support.snapshots import make_snapshot


def test_a_run_counts_the_figures_and_a_census_when_due(archive: Archive) -> None:
    archive.store(make_snapshot(0, files={"a.pdf": b"a" * 3000}))
    refreshed: list[int] = []
    settings = load_settings({"ARCHIVE_CENSUS_INTERVAL": "1h"})
    schedule = FiguresSchedule(archive, settings, lambda: refreshed.append(1))
    now = dt.datetime.now(dt.UTC)
    assert schedule.census_due(now) and read_census(archive) is None
    schedule.run_once()
    assert refreshed == [1]
    census = read_census(archive)
    assert census is not None and census[0].pieces >= 1 and census[0].stored_bytes == 3000
    assert not schedule.census_due(now + dt.timedelta(minutes=59))
    assert schedule.census_due(now + dt.timedelta(minutes=61))
    stats = archive_stats(archive)
    assert stats["stored_bytes"] == 3000 and stats["counted"] is not None


def test_no_census_when_the_interval_is_zero(archive: Archive) -> None:
    settings = load_settings({"ARCHIVE_CENSUS_INTERVAL": "0"})
    schedule = FiguresSchedule(archive, settings, lambda: None)
    schedule.run_once()
    assert not schedule.census_due(dt.datetime.now(dt.UTC))
    assert read_census(archive) is None


def test_a_census_under_way_stops_when_serve_does(archive: Archive) -> None:
    """Closing the schedule cancels a census between two rows: serve stops at once, and
    the census is taken at its next start."""
    for step in range(3):
        archive.store(make_snapshot(step, files={f"f{step}.pdf": bytes([step]) * 900}))
    settings = load_settings({"ARCHIVE_CENSUS_INTERVAL": "1h"})
    schedule = FiguresSchedule(archive, settings, lambda: None)
    schedule.close()  # before the run: as if serve stopped while it counted
    schedule.run_once()
    assert read_census(archive) is None
    FiguresSchedule(archive, settings, lambda: None).run_once()
    assert read_census(archive) is not None


def test_a_first_count_of_the_figures_stops_when_serve_does(archive: Archive) -> None:
    """The figures (and the Statistics page's range) stop between two days too, on the
    count's threads as well: a first count of a large store kept serve from stopping."""
    for day in range(1, 6):
        when = dt.datetime(2024, 3, day, 12, tzinfo=dt.UTC)
        archive.store(make_snapshot(day, modified=when))
    settings = load_settings({"ARCHIVE_CENSUS_INTERVAL": "0"})
    counted: list[object] = []

    def count() -> None:
        counted.append(archive_figures(archive))

    schedule = FiguresSchedule(archive, settings, count)
    schedule.close()  # as if serve stopped while the figures were counted
    schedule.run_once()
    assert counted == []
    FiguresSchedule(archive, settings, count).run_once()
    assert len(counted) == 1


def test_a_run_that_succeeds_clears_the_error_of_one_that_failed(archive: Archive) -> None:
    schedule = FiguresSchedule(archive, load_settings({}), lambda: None)
    schedule.failed(StoreUnavailableError("the store went away"))
    assert schedule.last_error == "the store went away"
    schedule.run_once()
    assert schedule.last_error == ""


def test_a_fault_of_the_code_is_logged_with_its_trace_a_store_error_as_a_warning(
    archive: Archive, caplog: pytest.LogCaptureFixture
) -> None:
    schedule = FiguresSchedule(archive, load_settings({}), lambda: None)
    with caplog.at_level(logging.WARNING):
        schedule.failed(StoreUnavailableError("the store went away"))
        schedule.failed(RuntimeError("a bug"))
    store, fault = caplog.records
    assert store.levelno == logging.WARNING and store.exc_info is None
    assert "counting the archive's figures failed" in store.getMessage()
    assert fault.levelno == logging.ERROR and fault.exc_info is not None
