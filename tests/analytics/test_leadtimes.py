"""Lead times per workflow group, with percentiles checked against the standard library."""

from __future__ import annotations

import datetime as dt
import statistics

import pytest

from analytics.generated_archive import STEP_HOURS, Planned
from imixs_archive.analytics.leadtimes import Finished, lead_times, percentile
from imixs_archive.archive.snapshots import Archive
from support.snapshots import make_snapshot


def expected(planned: list[Planned], statuses: set[str]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for p in planned:
        if p.step == p.steps - 1 and p.status.lower() in statuses:
            groups.setdefault(p.group, []).append(p.step * STEP_HOURS * 3600.0)
    return groups


def test_lead_times_per_group(generated: Archive, planned: list[Planned]) -> None:
    want = expected(planned, {"completed"})
    found = {g.group: g for g in lead_times(generated)}
    assert set(found) == set(want)
    for group, samples in want.items():
        assert sorted(found[group].samples) == sorted(samples)
        data = found[group].to_json()
        assert data["count"] == len(samples)
        assert data["min"] == min(samples) and data["max"] == max(samples)
        assert data["mean"] == pytest.approx(statistics.fmean(samples))
        if len(samples) > 1:
            cuts = statistics.quantiles(samples, n=100, method="inclusive")
            for q in (50, 75, 90, 95, 99):
                assert data[f"p{q}"] == pytest.approx(cuts[q - 1])


def test_one_group_and_another_finished_rule(generated: Archive, planned: list[Planned]) -> None:
    only = lead_times(generated, group="invoice")
    assert [g.group for g in only] == ["Invoice"]
    everything = lead_times(generated, finished=Finished.of(["open", "completed"]))
    assert sum(g.count for g in everything) == len({p.origin for p in planned})


def test_finished_range(generated: Archive, planned: list[Planned]) -> None:
    day = dt.date(2023, 3, 4)
    found = lead_times(generated, finished_from=day, finished_to=day)
    finished = [
        p for p in planned if p.step == p.steps - 1 and p.status == "Completed" and p.day == day
    ]
    assert sum(g.count for g in found) == len(finished)


def test_an_archived_workitem_is_finished(archive: Archive) -> None:
    archive.store(make_snapshot(0))
    archive.store(make_snapshot(30, type="snapshot-workitemarchive"))
    (invoice,) = lead_times(archive)
    assert invoice.group == "Invoice" and invoice.samples == [30 * 60.0]
    assert lead_times(archive, finished=Finished.of(["completed"], types=[])) == []


def test_percentile_interpolates_between_ranks() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
