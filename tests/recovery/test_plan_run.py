"""``plan_run.PlanRunner``: a stop mid-way leaves a watermark the next run resumes at
(every snapshot posted once), a failing instance is listed and does not stop the rest,
and the pace and the time left are counted from this run's instances."""

from __future__ import annotations

import threading

from imixs_archive.archive.snapshots import Archive
from imixs_archive.recovery.plan_run import (
    PlanReport,
    PlanRunner,
    check_plan,
    newest_of_every_instance,
)
from imixs_archive.workflow.client import WorkflowClient
from support.restore_data import archived_instances
from support.workflow_double import WorkflowDouble


def test_a_stopped_run_resumes_at_its_watermark(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    newest = archived_instances(double, archive, instances=12)
    double.wipe()
    sends = newest_of_every_instance(archive)
    assert [send.snapshot for send in sends] == [newest[uid] for uid in sorted(newest)]
    stop = threading.Event()

    def stop_after_five(report: PlanReport) -> None:
        if report.restored >= 5:
            stop.set()

    first = PlanRunner(
        archive, client, key="all", workers=2, stop=stop, on_progress=stop_after_five
    ).run(sends)
    state = archive.state.load()
    assert first.stopped and state.get_first("restore.plan.status") == "stopped"
    after = str(state.get_first("restore.plan.after"))
    assert 5 <= first.restored < 12 and after in newest
    second = PlanRunner(archive, client, key="all", workers=2).run(sends)
    assert second.resumed == sum(uid <= after for uid in newest)
    assert second.restored + second.current + second.resumed == 12
    assert double.stats.restored == dict.fromkeys(newest.values(), 1)
    assert archive.state.load().get_first("restore.plan.restored") == 12 - second.current


def test_a_failing_instance_is_listed_and_the_rest_goes_on(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    """The first POST answers 500: that instance is listed, the other three go; a run
    after a finished one checks every instance again and sends the failed one."""
    newest = archived_instances(double, archive, instances=4)
    double.wipe()
    double.inject("status", path=r"^/api/snapshot$", method="POST", status=500, times=1)
    sends = newest_of_every_instance(archive)
    report = PlanRunner(archive, client, key="all", workers=1).run(sends)
    first = min(newest)
    assert list(report.failed) == [first] and report.restored == 3
    assert archive.state.load().get_values("restore.plan.failed")[0].startswith(first)
    again = PlanRunner(archive, client, key="all", workers=1).run(sends)
    assert (again.restored, again.current, again.resumed, again.failed) == (1, 3, 0, {})
    assert double.workitems[first]["$snapshotid"] == [newest[first]]


def test_the_pace_and_the_time_left_leave_the_resumed_out() -> None:
    report = PlanReport(total=1000, restored=100, resumed=500, started=10.0)
    assert report.rate(now=20.0) == 10.0  # 100 instances of this run in 10 s
    assert report.seconds_left(now=20.0) == 40.0  # 400 left at 10/s
    assert PlanReport(total=5, started=10.0).seconds_left(now=20.0) is None


def test_a_stopped_check_of_a_plan_asks_the_workflow_nothing_more(
    double: WorkflowDouble, client: WorkflowClient, archive: Archive
) -> None:
    """A dry run whose stop is set (Ctrl-C, or the workflow found down by another of its
    requests) makes none of the requests still queued; unstopped, it asks about each."""
    archived_instances(double, archive, instances=6)
    double.wipe()
    sends = newest_of_every_instance(archive)
    stop = threading.Event()
    stop.set()
    before = double.stats.requests
    check = check_plan(archive, client, sends, workers=2, stop=stop)
    assert double.stats.requests == before
    assert (check.planned, check.current, check.failed) == (0, 0, {})
    check = check_plan(archive, client, sends, workers=2)
    assert check.planned == 6 and double.stats.requests == before + 6
