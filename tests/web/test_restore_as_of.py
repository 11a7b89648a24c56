"""``/api/restore/as-of`` over real HTTP against the workflow double: the dry run's plan
(nothing sent), the confirmation (no token: refused; another plan's token: the job fails
and nothing is sent; the plan's token: sent), and bad input refused before anything is
sent."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.restore_data import NEW_UID, archived_instances, bad_update
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, serve_beside
from web.test_api_access import assert_problem
from web.test_workflow import finished

DAY = dt.datetime(2026, 6, 10, 9, 0, tzinfo=dt.UTC)  # after the live server's own data
BAD = DAY + dt.timedelta(days=5)
POINT = (BAD - dt.timedelta(minutes=5)).replace(tzinfo=None).isoformat()  # in UTC


@pytest.fixture(scope="module")
def asof_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    yield from serve_beside(double.url, Path(tmp_path_factory.mktemp("asof")))


@pytest.fixture(scope="module")
def overwritten(double: WorkflowDouble, asof_live: LiveServer) -> dict[str, str]:
    """Instances 0 and 2 overwritten at BAD (and a new one); uid -> snapshot before."""
    newest = archived_instances(double, asof_live.archive, day=DAY)
    return bad_update(double, asof_live.archive, [sorted(newest)[0], sorted(newest)[2]], at=BAD)


def start(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    started = client.post("/api/restore/as-of", json=body)
    assert started.status_code == 202, started.text
    return finished(client, "/api/jobs/restore")


def test_plan_then_confirm_then_sent_once(
    asof_live: LiveServer, double: WorkflowDouble, overwritten: dict[str, str]
) -> None:
    posts = double.stats.posts
    with asof_live.client("manager") as client:
        planned = start(client, {"as_of": POINT})
        assert double.stats.posts == posts  # the plan sends nothing
        plan = planned["result"]
        assert planned["state"] == "finished" and plan["kind"] == "as-of-plan", planned
        assert {p["instance"]: p["snapshot"] for p in plan["back"]} == overwritten
        for entry in plan["back"]:
            changes = {c["item"]: c for c in entry["changes"]}
            assert changes["subject"]["now"] == "'overwritten'"
            assert changes["subject"]["restored"].startswith("'Ticket A")
        assert [n["instance"] for n in plan["not_yet"]] == [NEW_UID]
        assert plan["request"]["as_of"] == "2026-06-15T08:55:00+00:00"

        refused = client.post("/api/restore/as-of", json={"as_of": POINT, "dry_run": False})
        assert "confirm" in assert_problem(refused, 400)["message"]
        wrong = start(client, {"as_of": POINT, "dry_run": False, "confirm": "0" * 16})
        assert wrong["state"] == "failed" and "changed since the plan" in wrong["error"]
        assert double.stats.posts == posts

        done = start(client, {"as_of": POINT, "dry_run": False, "confirm": plan["token"]})
    result = done["result"]
    assert done["state"] == "finished" and result["kind"] == "as-of", done
    assert (result["restored"], result["current"], result["failed"]) == (2, 0, 0)
    assert result["not_yet_count"] == 1 and result["seconds_left"] == 0
    assert double.stats.posts == posts + 2
    with asof_live.client("reader") as client:
        saved = client.get("/api/restore").json()["plan"]
    assert (saved["status"], saved["restored"], saved["total"], saved["failed"]) == (
        "done",
        2,
        2,
        [],
    )
    assert saved["key"].startswith("as-of 2026-06-15T08:55:00+00:00")
    for uid, snapshot_id in overwritten.items():
        assert double.workitems[uid]["$snapshotid"] == [snapshot_id]
        assert double.stats.restored[snapshot_id] == 1


def test_a_plan_that_changed_is_not_sent(
    asof_live: LiveServer, double: WorkflowDouble, overwritten: dict[str, str]
) -> None:
    """Between the dry run and the confirmation another instance was overwritten: the
    confirmed plan is no longer the plan; nothing is sent."""
    point = (BAD + dt.timedelta(hours=1)).replace(tzinfo=None).isoformat()
    uid = sorted(overwritten)[0]
    with asof_live.client("manager") as client:
        bad_update(double, asof_live.archive, [uid], at=BAD + dt.timedelta(hours=2), new=False)
        plan = start(client, {"as_of": point})["result"]
        assert [p["instance"] for p in plan["back"]] == [uid]
        other = sorted(overwritten)[1]
        bad_update(double, asof_live.archive, [other], at=BAD + dt.timedelta(hours=3), new=False)
        posts = double.stats.posts
        done = start(client, {"as_of": point, "dry_run": False, "confirm": plan["token"]})
    assert done["state"] == "failed" and "make the dry run again" in done["error"]
    assert double.stats.posts == posts


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"as_of": "2999-01-01T00:00:00"}, 400, "is in the future"),
        ({"as_of": "yesterday"}, 400, "not a date or date-time"),
        ({"as_of": "1999-01-01T00:00:00Z"}, 404, "before the archive's first snapshot"),
        ({"as_of": POINT, "changed_until": POINT}, 400, "not after the as-of point"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_sent(
    asof_live: LiveServer,
    double: WorkflowDouble,
    overwritten: dict[str, str],
    body: dict[str, Any],
    status: int,
    message: str,
) -> None:
    requests = double.stats.requests
    with asof_live.client("manager") as client:
        for dry_run in (True, False):
            answer = client.post("/api/restore/as-of", json={**body, "dry_run": dry_run})
            assert message in assert_problem(answer, status)["message"]
    assert double.stats.requests == requests


def test_an_unknown_group_is_refused_at_once(
    asof_live: LiveServer, double: WorkflowDouble, overwritten: dict[str, str]
) -> None:
    requests = double.stats.requests
    with asof_live.client("manager") as client:
        answer = client.post("/api/restore/as-of", json={"as_of": POINT, "groups": ["Invoce"]})
        assert "group Invoce: no snapshot" in assert_problem(answer, 404)["message"]
        known = start(client, {"as_of": POINT, "groups": ["invoice"]})
    assert [p["instance"] for p in known["result"]["back"]] == [sorted(overwritten)[1]]
    assert double.stats.requests == requests


def test_a_reader_cannot_start_it(asof_live: LiveServer) -> None:
    with asof_live.client("reader") as client:
        assert_problem(client.post("/api/restore/as-of", json={"as_of": POINT}), 403)
