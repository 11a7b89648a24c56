"""The restore variants of the web service against the workflow test double over real HTTP:
dry run (the plan, nothing sent), several filters, every snapshot of one instance, a
backup folder on the server, stop; from the API and from the UI's forms. Results are
checked in the double, attachments by their SHA-256."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from imixs_archive.document.conventions import iter_files
from imixs_archive.recovery.backup import DayRange, backup
from support.restore_data import archived_instances, file_hashes
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, serve_beside
from web.test_api_access import assert_problem
from web.test_workflow import finished

DAY = dt.datetime(2022, 5, 10, 9, 0, tzinfo=dt.UTC)  # away from the live server's own data
RANGE = {"from": "2022-05-01", "to": "2022-05-31"}


@pytest.fixture(scope="module")
def rs_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    yield from serve_beside(double.url, Path(tmp_path_factory.mktemp("rs")))


@pytest.fixture
def newest(double: WorkflowDouble, rs_live: LiveServer) -> Iterator[dict[str, str]]:
    """Four instances of three steps each, archived, then lost by the workflow."""
    found = archived_instances(double, rs_live.archive, day=DAY)
    double.wipe()
    yield found
    double.clear_faults()
    double.wipe()


def run(client: httpx.Client, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    started = client.post(path, json=body)
    assert started.status_code == 202, started.text
    return finished(client, "/api/jobs/restore")


def test_dry_run_returns_the_plan_and_sends_nothing(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    with rs_live.client("manager") as client:
        status = run(client, "/api/restore", {**RANGE, "dry_run": True})
        overview = client.get("/api/restore").json()
    result = status["result"]
    assert status["state"] == "finished" and result["kind"] == "dry-run", status
    planned = {p["instance"]: p["snapshot"] for p in result["planned"]}
    assert planned == newest and result["planned_count"] == 4
    sizes = {p["snapshot"]: p["bytes"] for p in result["planned"]}
    for snapshot_id, size in sizes.items():
        doc = rs_live.archive.load(snapshot_id, with_files=False)
        assert size == sum(e.size or 0 for e in iter_files(doc))
    assert result["planned_bytes"] == sum(sizes.values())
    assert "4 would be restored" in status["message"]
    assert overview["job"]["result"]["planned_count"] == 4
    assert not double.workitems and not double.snapshots


def test_several_filters_all_have_to_match(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    filters = [
        {"item": "subject", "regex": "Ticket A.*"},
        {"item": "$workflowgroup", "regex": "Ticket"},
    ]
    with rs_live.client("manager") as client:
        status = run(client, "/api/restore", {**RANGE, "filters": filters})
    assert status["result"]["restored"] == 1 and status["result"]["filtered"] == 3, status
    (uid,) = double.workitems
    assert uid.startswith("00000000") and double.workitems[uid]["$snapshotid"] == [newest[uid]]


def test_every_snapshot_of_one_instance(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    uid = sorted(newest)[1]
    with rs_live.client("manager") as client:
        status = run(client, f"/api/restore/instance/{uid}")
        again = run(client, f"/api/restore/instance/{uid}")
        unknown = client.post("/api/restore/instance/99999999-0000-4000-8000-000000000000")
    assert status["result"]["kind"] == "instance" and status["result"]["restored"] == 3, status
    assert status["progress"]["restored"] == 3  # live progress while it ran
    assert again["result"]["skipped"] == 3 and again["result"]["restored"] == 0
    assert double.workitems[uid]["$snapshotid"] == [newest[uid]]
    archived = rs_live.archive.list_instance(uid)
    assert sorted(double.snapshots) == sorted(archived)
    for snapshot_id in archived:
        assert file_hashes(double.snapshots[snapshot_id]) == file_hashes(
            rs_live.archive.load(snapshot_id)
        )
    assert_problem(unknown, 404)


def test_a_backup_folder_on_the_server(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    root = rs_live.settings.backup_dir / "for-restore"
    backup(rs_live.archive, root, days=DayRange(DAY.date(), DAY.date() + dt.timedelta(days=3)))
    with rs_live.client("manager") as client:
        missing = client.post("/api/restore/source", json={"path": "no-such-folder"})
        outside = client.post("/api/restore/source", json={"path": "../"})
        status = run(client, "/api/restore/source", {"path": "for-restore"})
    assert "does not exist" in str(assert_problem(missing, 400)["message"])
    assert "outside" in str(assert_problem(outside, 400)["message"])
    result = status["result"]
    assert result["kind"] == "source" and (result["restored"], result["failed"]) == (4, 0), status
    for uid, snapshot_id in newest.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
        assert file_hashes(double.snapshots[snapshot_id]) == file_hashes(
            rs_live.archive.load(snapshot_id)
        )


def test_a_restore_is_stopped(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    double.inject("timeout", r"^/api/documents/", delay=0.2)  # the workflow hangs
    uid = sorted(newest)[2]
    with rs_live.client("manager") as client:
        started = client.post(f"/api/restore/instance/{uid}")
        assert started.status_code == 202
        busy = client.post("/api/restore", json=RANGE)
        assert_problem(busy, 409)
        assert client.post("/api/restore/stop").json()["state"] in ("stopping", "stopped")
        status = finished(client, "/api/jobs/restore")
    assert status["state"] == "stopped" and status["result"]["stopped"] is True, status
    assert status["result"]["restored"] < 3


def test_readers_and_strangers_cannot_restore(rs_live: LiveServer, newest: dict[str, str]) -> None:
    uid = sorted(newest)[0]
    calls: list[tuple[str, dict[str, Any] | None]] = [
        ("/api/restore", {**RANGE, "dry_run": True}),
        (f"/api/restore/instance/{uid}", None),
        ("/api/restore/source", {"path": "."}),
    ]
    for path, body in calls:
        with rs_live.client("reader") as reader:
            assert_problem(reader.post(path, json=body), 403)
        with rs_live.client() as anonymous:
            assert_problem(anonymous.post(path, json=body), 401)


def test_the_ui_forms(rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]) -> None:
    uid = sorted(newest)[3]
    form = {**RANGE, "filters": "subject=Ticket A.*\n$workflowgroup=Invoice", "dry_run": "yes"}
    with rs_live.client("manager", follow_redirects=True) as client:
        planned = client.post("/ui/actions/restore", data=form)
        assert "dry run started" in planned.text
        status = finished(client, "/api/jobs/restore")
        invoice = sorted(newest)[2]
        assert [p["instance"] for p in status["result"]["planned"]] == [invoice]
        page = client.get("/ui/restore").text
        assert 'class="list plan"' in page and newest[invoice] in page
        bad = client.post("/ui/actions/restore", data={**RANGE, "filters": "no equals sign"})
        assert "ITEM=REGEX" in bad.text
        unconfirmed = client.post(f"/ui/actions/restore-instance/{uid}", data={})
        assert "tick the box" in unconfirmed.text and not double.workitems
        confirmed = client.post(f"/ui/actions/restore-instance/{uid}", data={"confirm": "yes"})
        assert f"restore of every snapshot of {uid} started" in confirmed.text
        assert finished(client, "/api/jobs/restore")["result"]["restored"] == 3
        missing = client.post("/ui/actions/restore-source", data={"path": "gone"})
        assert "does not exist" in missing.text
        inspect = client.get("/ui/inspect", params={"q": uid}).text
        assert f"/ui/actions/restore-instance/{uid}" in inspect and f"/ui/history/{uid}" in inspect
    with rs_live.client("reader") as reader:
        assert "/ui/actions/restore-instance/" not in reader.get(f"/ui/inspect?q={uid}").text


def test_inspect_marks_the_snapshot_the_workflow_points_to(
    rs_live: LiveServer, double: WorkflowDouble, newest: dict[str, str]
) -> None:
    """As the Java Inspect page: the workitem's $snapshotid is marked in the listing."""
    uid = sorted(newest)[0]
    marker = 'class="badge live"'
    with rs_live.client("reader") as client:
        page = client.get("/ui/inspect", params={"q": uid}).text
        assert marker not in page and f"The workflow holds no workitem {uid}" in page
        with rs_live.client("manager") as manager:
            restored = manager.post(f"/api/restore/snapshot/{newest[uid]}")
            assert restored.status_code == 200 and restored.json()["restored"], restored.text
        assert double.workitems[uid]["$snapshotid"] == [newest[uid]]
        page = client.get("/ui/inspect", params={"q": uid}).text
        assert page.count(marker) == 1
        row = next(line for line in page.splitlines() if marker in line)
        assert f"/ui/snapshot/{newest[uid]}" in row
        double.inject("status", rf"^/api/documents/{uid}", status=500)
        page = client.get("/ui/inspect", params={"q": uid}).text
        assert marker not in page and "could not be asked which snapshot is live" in page


def test_restore_and_backup_pages_show_labelled_values(
    rs_live: LiveServer, newest: dict[str, str]
) -> None:
    """Not the state document's raw ``restore.*`` names and epoch milliseconds, not a JSON
    dump of a job: labels and values a person reads."""
    with rs_live.client("manager", follow_redirects=True) as client:
        run(client, "/api/restore", RANGE)
        page = client.get("/ui/restore").text
        assert "Range start" in page and "2022-05-01 00:00:00 UTC" in page
        assert "<th>restore." not in page and "{" not in page.split("<h2>Last restore")[1]
        client.post("/ui/actions/backup", data={})
        finished(client, "/api/jobs/backup")
        backup = client.get("/ui/backup").text
    job = backup.split('data-field="progress"', 1)[1].split("</table>", 1)[0]
    assert "<th>Written</th>" in job and '"written"' not in job
