"""The Monitor says what the sync loop is doing: the wait for its first round, with the
seconds left (it looked like a hang), and the events still in the workflow's event log."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.workflow_double import WorkflowDouble
from web.live import LiveServer, credentials_env, serve_store


def _serve(double: WorkflowDouble, tmp: Path, **env: str) -> Iterator[LiveServer]:
    settings = {**credentials_env(), "WORKFLOW_SERVICE_ENDPOINT": double.url, **env}
    yield from serve_store(tmp, settings)


BEGAN: dict[str, float] = {}
"""When a module's server began to start (monotonic): the wait it says is bracketed by it."""


@pytest.fixture(scope="module")
def waiting(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    BEGAN["waiting"] = time.monotonic()
    yield from _serve(double, tmp_path_factory.mktemp("waiting"), WORKFLOW_SYNC_INITIALDELAY="10m")


def _cell(page: str, attribute: str) -> str:
    inner = page.split(f"<td {attribute}>", 1)[1].split("</td>", 1)[0]
    return re.sub(r"\s+", " ", inner)


def test_the_wait_for_the_first_round_is_said_with_the_seconds_left(waiting: LiveServer) -> None:
    with waiting.client("reader") as client:
        page = client.get("/ui/monitor").text
        status = client.get("/api/sync/status").json()
    # what is left of 600 s since the server began to start (not 590 s at least: a bet on
    # how soon a busy machine starts it and draws the page)
    least = 600 - (time.monotonic() - BEGAN["waiting"]) - 1
    assert status["activity"]["text"].startswith("waiting to start: the first round starts in ")
    assert least <= status["activity"]["seconds"] <= 600 and status["pending"] == "not read yet"
    loop = _cell(page, "data-sync-state")
    found = re.fullmatch(
        r"waiting to start: the first round starts in <span data-countdown>(\d+)</span> s "
        r"\(WORKFLOW_SYNC_INITIALDELAY is 600 s\)",
        loop,
    )
    assert found, loop
    assert least <= int(found[1]) <= 600
    assert _cell(page, "data-pending") == "not read yet"
    assert 'data-refresh-seconds="15"' in page  # the page draws itself again
    # No event read yet: no lag to tell (it said "0.0 s")
    assert _cell(page, "data-lag") == "–" and status["lag_seconds"] is None
    with waiting.client("reader") as client:
        metrics = client.get("/metrics")
        assert metrics.status_code == 200 and "imixs_archive_sync_events" in metrics.text
        # at 0 until a round read the event log: a panel shows 0, not "no data" (issue 46)
        assert "\nimixs_archive_sync_event_lag_seconds 0.0\n" in metrics.text
        assert "\nimixs_archive_sync_pending_events 0.0\n" in metrics.text


def test_events_left_in_the_event_log_are_shown_pending(
    double: WorkflowDouble, tmp_path: Path
) -> None:
    saved = [str(double.save(subject=f"#{n}").get_first("$uniqueid")) for n in range(3)]
    double.inject("status", path=f"^/api/documents/{saved[0]}", status=500)
    env = {
        "WORKFLOW_SYNC_INITIALDELAY": "0",
        "WORKFLOW_SYNC_INTERVAL": "100",
        "WORKFLOW_SYNC_RETRYDELAY": "10m",
        "WORKFLOW_SYNC_MAXATTEMPTS": "5",
    }
    server = _serve(double, tmp_path, **env)
    live = next(server)
    try:
        with live.client("reader") as client:
            deadline = time.monotonic() + 60
            while True:
                page = client.get("/ui/monitor").text
                pending = _cell(page, "data-pending")
                # A round runs every 0.1 s: a page drawn during one says so; the next one
                # drawn between rounds is the one looked at.
                running = _cell(page, "data-sync-state") == "a round is running"
                if (pending.startswith("1 ") and not running) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert all(live.archive.exists(sid) for sid in saved[1:])
    finally:
        double.clear_faults()
        server.close()
    assert pending == '1 <span class="hint">(after the last round)</span>', pending
    assert _cell(page, "data-sync-state").startswith(
        "between rounds (events pending: 1); next round in <span data-countdown>"
    )
