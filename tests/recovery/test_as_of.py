"""Restore to a point in time (``recovery/as_of.py`` planned, ``plan_run.py`` sent), over
real HTTP against the workflow double, on SQLite and on the Cassandra node."""

from __future__ import annotations

import datetime as dt

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.model import Document
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.recovery.as_of import AsOf, plan_as_of
from imixs_archive.recovery.item_diff import diff_snapshots
from imixs_archive.recovery.plan_run import PlanRunner, Send
from imixs_archive.recovery.restore import parse_filter
from imixs_archive.workflow.client import WorkflowClient
from support.restore_data import BAD, DAY, NEW_UID, archived_instances, bad_update
from support.workflow_double import WorkflowDouble, file_entry

POINT = BAD - dt.timedelta(minutes=5)
NOW = BAD + dt.timedelta(days=1)


@pytest.fixture
def scenario(double: WorkflowDouble, archive: Archive) -> dict[str, str]:
    """Four instances; instances 0 and 2 overwritten at BAD, one new instance: returns
    the two overwritten uid -> the snapshot they had before."""
    newest = archived_instances(double, archive)
    uids = sorted(newest)
    return bad_update(double, archive, [uids[0], uids[2]])


def _sends(archive: Archive, request: AsOf) -> list[Send]:
    plan = plan_as_of(archive, request, now=NOW)
    return [Send(entry.origin, entry.snapshot) for entry in plan.back]


def test_plan_brings_back_the_state_at_the_point(
    archive: Archive, scenario: dict[str, str]
) -> None:
    plan = plan_as_of(archive, AsOf(POINT), now=NOW)
    assert {entry.origin: entry.snapshot for entry in plan.back} == scenario
    for entry in plan.back:
        changed = {change.name: change for change in entry.diff.items}
        assert set(changed) == {"subject", "$taskid", "$modified"}
        assert changed["subject"].current == ("overwritten",)
        assert changed["subject"].restored[0].startswith("Ticket ")
        assert not entry.diff.files
    assert [(new.origin, new.group) for new in plan.not_yet] == [(NEW_UID, "Ticket")]
    assert plan.filtered == 0


def test_restore_as_of_sends_the_plan_and_nothing_twice(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive, scenario: dict[str, str]
) -> None:
    request = AsOf(POINT)
    report = PlanRunner(archive, client, key="t").run(_sends(archive, request))
    assert (report.restored, report.current, report.failed) == (2, 0, {})
    for uid, snapshot_id in scenario.items():
        live = double.workitems[uid]
        assert live["$snapshotid"] == [snapshot_id]
        assert live.get_first("subject") == double.snapshots[snapshot_id].get_first("subject")
    assert double.workitems[NEW_UID].get_first("subject") == "new"  # not deleted
    again = PlanRunner(archive, client, key="t").run(_sends(archive, request))
    assert (again.restored, again.current) == (0, 2)
    assert sorted(double.stats.restored.values()) == [1, 1]


def test_changed_until_leaves_later_changes(archive: Archive, scenario: dict[str, str]) -> None:
    """Instance 2 was overwritten a minute after instance 0: a window ending between the
    two brings back instance 0 only (and the new instance, 30 s in, is listed)."""
    until = BAD + dt.timedelta(seconds=45)
    plan = plan_as_of(archive, AsOf(POINT, until), now=NOW)
    [entry] = plan.back
    assert entry.origin == min(scenario)
    assert [new.origin for new in plan.not_yet] == [NEW_UID]


def test_groups_and_filters_narrow_the_plan(archive: Archive, scenario: dict[str, str]) -> None:
    invoice = plan_as_of(archive, AsOf(POINT, groups=("invoice",)), now=NOW)
    assert [entry.origin for entry in invoice.back] == [max(scenario)]  # instance 2
    assert not invoice.not_yet
    only_a0 = AsOf(POINT, filters=(parse_filter("subject=Ticket A0"),))
    plan = plan_as_of(archive, only_a0, now=NOW)
    assert [entry.origin for entry in plan.back] == [min(scenario)]
    assert plan.filtered == 2  # instance 2 at the point ("Ticket A2") and the new one


def test_bad_points_and_groups_are_refused(archive: Archive, scenario: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="in the future"):
        plan_as_of(archive, AsOf(NOW + dt.timedelta(seconds=1)), now=NOW)
    with pytest.raises(ConfigError, match="not after the as-of point"):
        plan_as_of(archive, AsOf(POINT, POINT), now=NOW)
    with pytest.raises(NotFoundError, match="before the archive's first snapshot"):
        plan_as_of(archive, AsOf(DAY - dt.timedelta(milliseconds=1)), now=NOW)
    with pytest.raises(NotFoundError, match="group Invoce: no snapshot"):
        plan_as_of(archive, AsOf(POINT, groups=("Invoce",)), now=NOW)
    first = plan_as_of(archive, AsOf(DAY), now=NOW)  # the first snapshot's own time
    assert len(first.back) == 1 and len(first.not_yet) == 4


def test_a_group_known_but_unchanged_is_an_empty_plan(
    double: WorkflowDouble, archive: Archive
) -> None:
    archived_instances(double, archive)
    plan = plan_as_of(archive, AsOf(DAY + dt.timedelta(days=4), groups=("Invoice",)), now=NOW)
    assert (plan.back, plan.not_yet) == ([], [])


def test_the_point_is_compared_as_an_instant() -> None:
    """An aware point in another zone is the same instant: same key."""
    berlin = POINT.astimezone(dt.timezone(dt.timedelta(hours=1)))
    assert AsOf(berlin).key() == AsOf(POINT).key()
    with pytest.raises(ConfigError):
        AsOf(POINT.replace(tzinfo=None))


def test_the_diff_names_items_and_files() -> None:
    now = Document({"$uniqueid": "a-2", "subject": "new", "gone": 1})
    now["$file"] = [{"a.pdf": file_entry(b"x"), "b.pdf": file_entry(b"y")}]
    then = Document({"$uniqueid": "a-1", "subject": "old", "back": "yes"})
    then["$file"] = [{"a.pdf": file_entry(b"z"), "c.pdf": file_entry(b"w")}]
    diff = diff_snapshots(now, then)
    assert diff.lines() == [
        "back: (none) -> 'yes'",
        "gone: 1 -> (none)",
        "subject: 'new' -> 'old'",
        "file a.pdf: changed",
        "file b.pdf: removed",
        "file c.pdf: added",
    ]
