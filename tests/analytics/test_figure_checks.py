"""``verify`` checks the figures the analytics keep (``analytics/figure_checks.py``), on
every backend: a kept day summary or kept month altered through the store is a problem
naming exactly its table, stale figures and damaged facts are not blamed on them, and
``stats --reconcile`` counts them again."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pytest
from tests.archive.verify_fill import fill

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.archive.facts import Fact
from imixs_archive.archive.snapshots import Archive
from imixs_archive.services.checks import verify_once
from imixs_archive.services.reconcile import reconcile
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_DAY_SUMMARIES,
    ARCHIVE_MONTH_FIGURES,
    ARCHIVE_SNAPSHOT_FACTS,
)
from support.snapshots import make_snapshot

SUMMARIES, MONTHS = ARCHIVE_DAY_SUMMARIES.name, ARCHIVE_MONTH_FIGURES.name


@pytest.fixture
def kept(archive: Archive) -> Archive:
    """Snapshots of finished days, their summaries and months kept by a view."""
    fill(archive, instances=4)
    archive_figures(archive)
    backend = archive.backend
    assert next(backend.scan(ARCHIVE_DAY_SUMMARIES), None) is not None
    assert next(backend.scan(ARCHIVE_MONTH_FIGURES, {"zone": "sums@UTC"}), None) is not None
    return archive


def _rewrite(backend: Backend, table: object, row: Row, change: Callable[[dict], None]) -> None:
    data = json.loads(row["data"])
    change(data)
    backend.put(table, [{**row, "data": json.dumps(data).encode()}])  # type: ignore[arg-type]


def _summary_altered(backend: Backend) -> None:
    row = next(backend.scan(ARCHIVE_DAY_SUMMARIES))
    _rewrite(backend, ARCHIVE_DAY_SUMMARIES, row, lambda d: d.update(new_instances=99))


def _summary_unreadable(backend: Backend) -> None:
    row = next(backend.scan(ARCHIVE_DAY_SUMMARIES))
    backend.put(ARCHIVE_DAY_SUMMARIES, [{**row, "data": b"{"}])


def _month_altered(backend: Backend) -> None:
    row = next(backend.scan(ARCHIVE_MONTH_FIGURES, {"zone": "sums@UTC"}))
    _rewrite(backend, ARCHIVE_MONTH_FIGURES, row, lambda d: d.update(instances=99))


DAMAGE = {
    "summary altered": (SUMMARIES, _summary_altered),
    "summary unreadable": (SUMMARIES, _summary_unreadable),
    "month altered": (MONTHS, _month_altered),
}


def test_kept_figures_that_agree_are_clean(kept: Archive) -> None:
    report = verify_once(kept)
    assert report.ok and not report.disagreeing, report.problems


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_altered_figures_name_their_table_and_the_reconcile_counts_them_again(
    kept: Archive, backend: Backend, damage: str
) -> None:
    table, make = DAMAGE[damage]
    make(backend)
    report = verify_once(kept)
    assert report.disagreeing == {table: 1}, report.problems
    reconcile(kept)
    archive_figures(kept)  # kept again
    report = verify_once(kept)
    assert report.ok, report.problems


def test_a_damaged_fact_is_not_blamed_on_the_figures_counted_from_it(
    kept: Archive, backend: Backend
) -> None:
    row = next(backend.scan(ARCHIVE_SNAPSHOT_FACTS))
    fact = Fact.decode(row["data"])
    changed = [fact.slot, ["Other", *fact.labels[1:]], fact.logical, fact.new_files, 0]
    backend.put(ARCHIVE_SNAPSHOT_FACTS, [{**row, "data": json.dumps(changed).encode()}])
    assert verify_once(kept).disagreeing == {ARCHIVE_SNAPSHOT_FACTS.name: 1}


def test_figures_a_snapshot_stored_since_made_stale_are_not_damage(
    kept: Archive, backend: Backend
) -> None:
    day = dt.date(2023, 11, 14)
    assert backend.get(ARCHIVE_DAY_SUMMARIES, {"year": 2023, "day": day}) is not None
    before = kept.days.stamps(day, day)
    kept.store(make_snapshot(5, origin="1a0e3a6d-a0e4-4875-89f1-3b418859abe5"))
    assert kept.days.stamps(day, day) != before  # counted again at the next view
    report = verify_once(kept)
    assert report.ok, report.problems
