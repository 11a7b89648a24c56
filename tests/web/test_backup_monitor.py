"""The FTPS backup under ``serve`` made visible (issue 31, item 3): over real HTTP, with the
workflow test double and a real FTPS server on loopback, its rounds show in /metrics,
/readyz, /health/ready and the Monitor's FTPS backup card (also in real headless
Chromium), and a full backup to FTPS and a restore from it run as jobs from the API and
the UI."""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from imixs_archive.document.model import Document
from support.ftps_server import FtpsServer, serve
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, credentials_env, serve_store

CHROMIUM = os.environ.get("ARCHIVE_TEST_CHROMIUM", "/usr/bin/chromium")
GONE = "0badf00d-dead-4222-8333-444444444444-1700000000000"


def ftps_env(ftps: FtpsServer, double: WorkflowDouble) -> dict[str, str]:
    return {
        **credentials_env(),
        "WORKFLOW_SERVICE_ENDPOINT": double.url,
        "WORKFLOW_SYNC_INITIALDELAY": "0",
        "WORKFLOW_SYNC_INTERVAL": "200ms",
        "WORKFLOW_SYNC_CATCHUP": "false",
        **ftps.env(),
    }


def only_in_the_workflow(double: WorkflowDouble) -> str:
    snapshot = double.save(
        Document({"$uniqueid": "0badcafe-2222-4222-8333-444444444444", "subject": "x"}),
        files={"a.pdf": b"%PDF" * 1000},
        event=False,
    )
    return str(snapshot.get_first("$uniqueid"))


def metric(text: str, name: str, labels: str = "") -> float | None:
    found = re.search(rf"^imixs_archive_{name}{re.escape(labels)} ([0-9.e+-]+)$", text, re.M)
    return float(found[1]) if found else None


def wait_for_metrics(live: LiveServer, done: dict[str, float]) -> str:
    """/metrics once every ``outcome: count`` of ``backup_events`` is reached."""
    deadline = time.monotonic() + 60
    with live.socket_client("reader") as client:
        while True:
            text = client.get("/metrics").text
            counts = {
                outcome: metric(text, "backup_events", f'{{outcome="{outcome}"}}')
                for outcome in done
            }
            if all((counts[o] or 0) >= n for o, n in done.items()):
                return text
            assert time.monotonic() < deadline, counts
            time.sleep(0.1)


def wait_for_job(client: httpx.Client, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status: dict[str, Any] = client.get(f"/api/jobs/{name}").json()
        if status["state"] not in ("running", "stopping", "not_run"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ftps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpsServer]:
    root = tmp_path_factory.mktemp("ftps")
    yield from serve(root)


@pytest.fixture(scope="module")
def double() -> Iterator[WorkflowDouble]:
    with WorkflowDouble() as running:
        yield running


@pytest.fixture(scope="module")
def served(
    ftps: FtpsServer, double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, str]]:
    """serve with the FTPS backup of events; a snapshot only the workflow holds and one
    that is nowhere have their events waiting."""
    snapshot_id = only_in_the_workflow(double)
    double.put_event("snapshot.backup", snapshot_id)
    double.put_event("snapshot.backup", GONE)
    with contextmanager(serve_store)(
        tmp_path_factory.mktemp("served"), ftps_env(ftps, double)
    ) as live:
        wait_for_metrics(live, {"written": 1, "gone": 1})
        yield live, snapshot_id


def test_metrics_count_every_outcome(served: tuple[LiveServer, str]) -> None:
    live, _snapshot_id = served
    text = wait_for_metrics(live, {"written": 1, "gone": 1})
    assert metric(text, "backup_running") == 1
    assert metric(text, "backup_events", '{outcome="pulled"}') == 1
    for outcome in ("current", "given_up", "failed", "released"):
        assert metric(text, "backup_events", f'{{outcome="{outcome}"}}') == 0, outcome
    assert (metric(text, "backup_rounds") or 0) >= 1
    assert metric(text, "backup_pending_events") == 0
    assert metric(text, "backup_round_failures") == 0
    assert (metric(text, "backup_last_success_seconds") or 0) > time.time() - 60
    assert (metric(text, "backup_last_round_seconds") or 0) > time.time() - 60
    # beside them, the Java services' names (issue 45 item 6): written and gone processed
    scope = '{mp_scope="application"}'
    assert java_metric(text, "backup_events_processed_total", scope) == 2
    assert java_metric(text, "backup_events_errors_total", scope) == 0
    for method in ("archive", "delete"):  # the sync runs, no snapshot.add event came
        assert java_metric(text, "application_documents_total", f'{{method="{method}"}}') == 0


def java_metric(text: str, name: str, labels: str) -> float | None:
    found = re.search(rf"^{name}{re.escape(labels)} ([0-9.e+-]+)$", text, re.M)
    return float(found[1]) if found else None


def test_readiness_says_how_the_backup_goes(served: tuple[LiveServer, str]) -> None:
    live, _snapshot_id = served
    with live.socket_client() as client:
        ready = client.get("/readyz")
        mp = client.get("/health/ready").json()
    assert ready.status_code == 200, ready.text
    backup = ready.json()["checks"]["backup"]
    assert backup["ok"] and backup["message"].startswith("ok: last round "), backup
    assert "last round without a failure: 20" in backup["message"]
    assert mp["checks"][0]["data"]["backup"].startswith("ok: last round ")


def _card(page: str) -> dict[str, str]:
    card = page.split('id="backup"', 1)[1].split("</section>", 1)[0]
    return {
        key: html.unescape(value)
        for key, value in re.findall(r'<td data-backup="(\w+)"[^>]*>(.*?)</td>', card, re.S)
    }


def test_the_monitor_card(served: tuple[LiveServer, str], ftps: FtpsServer) -> None:
    live, _snapshot_id = served
    with live.socket_client("reader") as client:
        page = client.get("/ui/monitor").text
    card = _card(page)
    glance = re.search(r'<td data-glance="backup"[^>]*>(.*?)</td>', page, re.S)
    assert glance and "; FTPS backup of events: last round ok, 0 left" in html.unescape(glance[1])
    assert card["target"] == f"ftps://backup@{ftps.host}:{ftps.port}/backup · snapshot.backup"
    assert card["source"] == "snapshots from the archive, from the workflow those it lacks"
    assert card["loop"] == "running, a round every 200ms"
    assert card["pending"] == "0"
    assert card["success"] != "–"
    assert re.match(
        r"\d+ rounds: 1 written, 0 already current \(1 taken from the workflow\), 1 gone "
        r"from the workflow, 0 given up, 0 failed, 0 dead locks released$",
        card["totals"],
    ), card["totals"]


def test_a_full_backup_and_a_restore_over_ftps_as_jobs(
    served: tuple[LiveServer, str], ftps: FtpsServer, double: WorkflowDouble
) -> None:
    live, _snapshot_id = served
    with live.socket_client("manager") as client:
        refused = client.post("/api/backup", json={"ftps": True, "folder": "x"})
        assert refused.status_code == 400, refused.text
        started = client.post("/api/backup", json={"ftps": True})
        assert started.status_code == 202, started.text
        backup = wait_for_job(client, "backup")
        assert backup["state"] == "finished", backup
        result = backup["result"]
        assert result["target"].startswith("ftps://backup@") and result["failed"] == 0
        instances = result["written"] + result["current"]
        assert instances >= 2 and result["written"] >= 1
        files = list((ftps.root / "backup").rglob("*.xml"))
        assert len(files) >= instances

        refused = client.post("/api/restore/source", json={"ftps": True, "path": "x"})
        assert refused.status_code == 400, refused.text
        posted_before = double.stats.posts
        started = client.post("/api/restore/source", json={"ftps": True})
        assert started.status_code == 202, started.text
        restore = wait_for_job(client, "restore")
    assert restore["state"] == "finished", restore
    assert restore["result"]["failed"] == 0
    assert restore["result"]["restored"] + restore["result"]["present"] == len(files)
    assert double.stats.posts - posted_before == restore["result"]["restored"] >= 1


def test_the_card_and_the_ftps_backup_form_in_chromium(
    served: tuple[LiveServer, str], ftps: FtpsServer
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    browser_tests: Any = pytest.importorskip("web.test_browser")
    live, _snapshot_id = served
    with browser_tests.logged_in_page(live.url, "mia") as page:
        card = page.locator("#backup")
        assert card.locator("h2").inner_text() == "FTPS backup"
        totals = card.locator('[data-backup="totals"]').inner_text()
        assert "1 gone from the workflow" in totals
        assert card.locator('[data-backup="round"]').is_visible()
        for path, card_id in [
            ("/ui/monitor", "backup"),
            ("/ui/backup", "ftps-backup"),
            ("/ui/restore", "ftps-restore"),
        ]:  # at phone width: nothing wider than the screen, nothing unreadable
            page.set_viewport_size({"width": 375, "height": 800})
            page.goto(path)
            assert page.locator(f"#{card_id}").is_visible(), path
            assert page.evaluate("document.documentElement.scrollWidth") <= 376, path
            assert page.evaluate(browser_tests.UNREADABLE) == [], path
            browser_tests.shot(page, f"backup-ftps-phone-{card_id}")
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto("/ui/backup")
        ftps_card = page.locator("#ftps-backup")
        assert ftps.host in ftps_card.inner_text()
        ftps_card.locator("button[name=start_ftps]").click()
        page.wait_for_url("**/ui/backup?**")
        assert "backup started" in page.locator(".banner").first.inner_text()
    with live.socket_client("reader") as client:
        backup = wait_for_job(client, "backup")
    assert backup["state"] == "finished" and backup["result"]["target"].startswith("ftps://")


def test_backup_only_pulls_from_the_workflow_and_runs_no_sync(
    ftps: FtpsServer, tmp_path: Path
) -> None:
    """BACKUP_ONLY: the workflow's snapshot is backed up, nothing is archived, and the
    service is ready with its sync off (no alert for a stopped sync). A workflow of its
    own: the module's service consumes the other's events."""
    with WorkflowDouble() as double:
        backup_only(ftps, double, tmp_path)


def backup_only(ftps: FtpsServer, double: WorkflowDouble, tmp_path: Path) -> None:
    snapshot = double.save(
        Document({"$uniqueid": "0badcafe-3333-4222-8333-444444444444", "subject": "y"}),
        files={"b.pdf": b"%PDF" * 800},
    )  # with its snapshot.add event, which no sync takes here
    snapshot_id = str(snapshot.get_first("$uniqueid"))
    double.put_event("snapshot.backup", snapshot_id)
    env = {**ftps_env(ftps, double), "BACKUP_ONLY": "true", "WORKFLOW_SYNC_CATCHUP": "true"}
    with contextmanager(serve_store)(tmp_path, env) as live:
        text = wait_for_metrics(live, {"written": 1, "pulled": 1})
        assert metric(text, "sync_configured") == 0 and metric(text, "sync_running") == 0
        with live.socket_client("reader") as client:
            ready = client.get("/readyz")
            page = client.get("/ui/monitor").text
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["sync"]["message"] == "off (BACKUP_ONLY)"
        assert "the sync is off (BACKUP_ONLY)" in page
        assert _card(page)["source"] == "every snapshot from the workflow (BACKUP_ONLY)"
        assert not live.archive.exists(snapshot_id)
    assert [e.topic for e in double.log.values()] == ["snapshot.add"]
    assert list((ftps.root / "backup").rglob("0badcafe-3333-*.xml"))
