"""Jobs over HTTP (the app in process, see live.py): verify and backup run; sync and
restore say they are not available."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from imixs_archive.services.jobs import Job
from web.live import LiveServer


def wait_for(client: httpx.Client, path: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status: dict[str, Any] = client.get(path).json()
        if not status["active"]:
            return status
        time.sleep(0.05)
    raise AssertionError(f"{path} did not finish")


def test_verify_runs_as_a_job(live: LiveServer) -> None:
    with live.client("manager") as client:
        started = client.post("/api/verify")
        assert started.status_code == 202 and started.json()["name"] == "verify"
        status = wait_for(client, "/api/verify")
    assert status["state"] == "finished", status
    assert status["result"]["ok"] is True and status["result"]["snapshots"] >= 12
    assert "clean" in status["message"]
    with live.client("reader") as client:
        listed = {job["name"]: job for job in client.get("/api/jobs").json()}
        assert listed["verify"]["state"] == "finished"
        assert client.get("/api/jobs/verify").json()["result"]["ok"] is True
        assert client.get("/api/jobs/never").status_code == 404


def test_a_second_start_conflicts_and_stop_works(live: LiveServer) -> None:
    jobs = live.app.state.services.jobs
    gate = threading.Event()

    def hold(job: Job) -> str:
        gate.wait(10)
        return "held"

    jobs.start("backup", hold)
    try:
        with live.client("manager") as client:
            busy = client.post("/api/backup", json={})
            assert busy.status_code == 409 and "already running" in busy.json()["message"]
            stopping = client.post("/api/jobs/backup/stop")
            assert stopping.status_code == 200 and stopping.json()["state"] == "stopping"
    finally:
        gate.set()
    status = jobs.wait("backup", 10)
    assert status is not None and status.state == "stopped"


def test_backup_writes_the_java_layout(live: LiveServer) -> None:
    with live.client("manager") as client:
        bad = client.post("/api/backup", json={"folder": "../etc"})
        assert bad.status_code == 400
        reversed_range = client.post("/api/backup", json={"from": "2024-02-01", "to": "2024-01-01"})
        assert reversed_range.status_code == 400
        instances = client.get("/api/stats").json()["instances"]
        started = client.post("/api/backup", json={"folder": "nightly"})
        assert started.status_code == 202, started.text
        status = wait_for(client, "/api/backup")
    assert status["state"] == "finished", status
    result = status["result"]
    root = Path(result["target"])
    assert root == live.settings.backup_dir / "nightly"
    assert result["written"] == instances and result["failed"] == 0  # newest of each
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.xml"))
    assert len(files) == instances and all(f.count("/") == 2 for f in files)  # yyyy/MM/<uid>


def test_sync_and_restore_are_not_faked(live: LiveServer) -> None:
    with live.client("manager") as client:
        status = client.get("/api/sync/status").json()
        assert status["configured"] is False and status["running"] is False
        assert "WORKFLOW_SERVICE_ENDPOINT" in status["message"]
        for method, path, body in [
            ("GET", "/api/sync/deadletters", None),
            ("POST", "/api/sync/deadletters/e1/retry", None),
            ("POST", "/api/sync/resync", {"from": 0}),
            ("POST", "/api/sync/resync/stop", None),
            ("POST", "/api/restore", {"from": "2024-01-01", "to": "2024-12-31"}),
            ("POST", "/api/restore/stop", None),
        ]:
            answer = client.request(method, path, json=body)
            assert answer.status_code == 503, (path, answer.text)
            assert "not configured: set WORKFLOW_SERVICE_ENDPOINT" in answer.json()["message"]
        restore = client.get("/api/restore").json()
        assert restore["configured"] is False and "restore.point" in restore["state"]
        one = client.post(
            "/api/restore/snapshot/b16f11e5-0000-4000-8000-000000000001-1111111111111"
        )
        assert one.status_code == 404  # an unknown snapshot is that, first
        bad_body = client.post("/api/restore", json={"from": "yesterday"})
        assert bad_body.status_code == 400 and bad_body.json()["status"] == 400
