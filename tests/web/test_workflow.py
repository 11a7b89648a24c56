"""The service with a workflow: the sync loop in ``serve``, dead letters and retry, resync,
and restore (range and one snapshot) against the workflow test double over real HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from imixs_archive.document.conventions import origin_id
from support.workflow_double import WorkflowDouble
from web.live import LiveServer, serve_beside


def eventually(check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def finished(client: httpx.Client, path: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status: dict[str, Any] = client.get(path).json()
        return None if status["active"] else status

    result: dict[str, Any] = eventually(done)
    return result


@pytest.fixture(scope="module")
def wf_live(
    double: WorkflowDouble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    yield from serve_beside(
        double.url,
        Path(tmp_path_factory.mktemp("wf")),
        WORKFLOW_SYNC_INITIALDELAY="0",
        WORKFLOW_SYNC_INTERVAL="50",
        WORKFLOW_SYNC_MAXATTEMPTS="1",
        WORKFLOW_SYNC_RETRYDELAY="0",
    )


def test_the_sync_loop_runs_in_the_service(wf_live: LiveServer, double: WorkflowDouble) -> None:
    snapshot = double.save(subject="synced by serve", files={"s.txt": b"synced"})
    sid = snapshot.get_first("$uniqueid")
    eventually(lambda: wf_live.archive.exists(sid))
    with wf_live.client("reader") as client:
        status = client.get("/api/sync/status").json()
        assert status["configured"] and status["running"], status
        assert status["counters"]["archived"] >= 1
        assert client.get(f"/api/archive/snapshot/{sid}/file/s.txt").content == b"synced"
        ready = client.get("/readyz").json()
        assert ready["ready"] and ready["checks"]["sync"]["ok"]
        metrics = client.get("/metrics").text
    assert "imixs_archive_sync_running 1.0" in metrics
    assert 'imixs_archive_sync_events{counter="archived"}' in metrics


def test_dead_letters_are_listed_and_retried(wf_live: LiveServer, double: WorkflowDouble) -> None:
    fault = double.inject("malformed", r"^/api/documents/deadbeef")
    snapshot = double.save(
        **{"$uniqueid": "deadbeef-0000-4000-8000-000000000001"}, subject="will fail once"
    )
    sid = snapshot.get_first("$uniqueid")
    with wf_live.client("manager") as client:

        def letters() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = client.get("/api/sync/deadletters").json()["dead_letters"]
            return [f for f in found if f["ref"] == sid]

        (letter,) = eventually(letters)
        with wf_live.client("reader") as reader:
            assert (
                reader.post(f"/api/sync/deadletters/{letter['event_id']}/retry").status_code == 403
            )
        double.clear_faults()
        retried = client.post(f"/api/sync/deadletters/{letter['event_id']}/retry")
        assert retried.status_code == 200 and retried.json()["requeued"][0]["ref"] == sid
        eventually(lambda: wf_live.archive.exists(sid))
        assert not letters()
        assert client.post("/api/sync/deadletters/no-such-event/retry").status_code == 404
    assert fault.hits >= 1


def test_resync_walks_the_syncpoint_feed(wf_live: LiveServer, double: WorkflowDouble) -> None:
    quiet = [double.save(subject=f"no event {n}", event=False) for n in range(3)]
    with wf_live.client("manager") as client:
        started = client.post("/api/sync/resync", json={"from": 0})
        assert started.status_code == 202, started.text
        status = finished(client, "/api/jobs/resync")
    assert status["state"] == "finished" and status["result"]["status"] == "done", status
    assert all(wf_live.archive.exists(s.get_first("$uniqueid")) for s in quiet)


def test_restore_a_range_and_one_snapshot(wf_live: LiveServer, double: WorkflowDouble) -> None:
    # The bundled samples (March 2024) are in the archive, not in the workflow.
    with wf_live.client("manager") as client:
        bad = client.post("/api/restore", json={"from": "2024-03-31", "to": "2024-03-01"})
        assert bad.status_code == 400
        regex = client.post(
            "/api/restore",
            json={
                "from": "2024-03-01",
                "to": "2024-03-31",
                "filters": [{"item": "x", "regex": "("}],
            },
        )
        assert regex.status_code == 400
        started = client.post("/api/restore", json={"from": "2024-03-01", "to": "2024-03-31"})
        assert started.status_code == 202, started.text
        status = finished(client, "/api/jobs/restore")
        assert status["state"] == "finished", status
        assert status["result"]["restored"] == 3 and status["result"]["failed"] == 0
        overview = client.get("/api/restore").json()
        assert (
            overview["state"]["restore.status"] == "done" and overview["job"]["state"] == "finished"
        )
        restored = [sid for sid in double.snapshots if sid.startswith(("7c9e6679", "16fd2706"))]
        assert restored
        # One snapshot: an older one of an instance goes; then the instance is at it.
        older = wf_live.archive.list_instance(restored[0].rsplit("-", 1)[0])[-1]
        first = client.post(f"/api/restore/snapshot/{older}").json()
        again = client.post(f"/api/restore/snapshot/{older}").json()
    assert first["restored"] is True and again["restored"] is False


def test_a_snapshot_gone_from_the_workflow_shows_in_status_monitor_and_metrics(
    wf_live: LiveServer, double: WorkflowDouble
) -> None:
    snapshot = double.save(subject="deleted before the archive got it")
    sid = str(snapshot.get_first("$uniqueid"))
    with double.lock:  # SNAPSHOT_HISTORY=1: the workflow deleted the intermediate snapshot
        double.snapshots.pop(sid)
        double._xml.pop(sid)
    with wf_live.client("manager") as client:

        def gone() -> dict[str, Any] | None:
            # The gone row is written when the event is done, the process's counters
            # at the end of its round: both are waited for.
            status: dict[str, Any] = client.get("/api/sync/status").json()
            recorded = any(g["ref"] == sid for g in status["gone"])
            return status if recorded and status["counters"]["gone"] >= 1 else None

        status = eventually(gone)
        assert status["gone_count"] >= 1
        assert not [f for f in status["dead_letters"] + status["retrying"] if f["ref"] == sid]
        page = client.get("/ui/monitor").text
        metrics = client.get("/metrics").text
    assert sid in page and "gone from the workflow" in page.lower()
    assert 'imixs_archive_sync_events{counter="gone"} 1.0' in metrics
    assert not wf_live.archive.exists(sid)


def test_the_monitor_shows_what_the_event_sync_archived(
    wf_live: LiveServer, double: WorkflowDouble
) -> None:
    """The sync point and count of the state document are the resync's: the Monitor shows
    the event sync's own count (every process) beside them, labelled apart."""
    sid = double.save(subject="counted on the monitor").get_first("$uniqueid")
    eventually(lambda: wf_live.archive.exists(sid))
    with wf_live.client("reader") as client:

        def shown() -> int:
            page = client.get("/ui/monitor").text
            cell = page.split("data-archived-by-sync>", 1)[1].split("<", 1)[0]
            return int(cell)

        counted = eventually(shown)
        instances = client.get("/api/sync/status").json()["instances"]
        page = client.get("/ui/monitor").text
    assert counted >= 1 and counted <= sum(row["archived"] for row in instances)
    assert "Resync point" in page and "Snapshots resynced" in page
    assert "Synced snapshots" not in page


def test_the_resync_form_takes_a_date_and_time(wf_live: LiveServer) -> None:
    with wf_live.client("manager", follow_redirects=True) as client:
        assert 'type="datetime-local" name="from"' in client.get("/ui/resync").text
        bad = client.post("/ui/actions/resync", data={"from": "yesterday"})
        assert "not a date and time" in bad.text
        started = client.post("/ui/actions/resync", data={"from": "2030-01-01T08:00"})
        assert "resync started" in started.text, started.text
        assert finished(client, "/api/jobs/resync")["state"] == "finished"
        point = client.get("/api/sync/status").json()["sync.point"]
        page = client.get("/ui/resync").text
    assert point >= 1_893_484_800_000  # 2030-01-01T08:00Z, not the epoch milliseconds 2030
    shown = page.split("<th>Resync point</th><td>", 1)[1].split("<", 1)[0]
    assert shown.startswith("2030-01-01 ") and shown.endswith(" UTC")
    assert "<th>resync." not in page and "<th>Status</th>" in page


def test_a_slow_workflow_holds_up_no_other_request(
    wf_live: LiveServer, double: WorkflowDouble
) -> None:
    """A restore into a workflow that takes seconds to take the snapshot runs beside the
    other requests: the UI's form handlers call the workflow and the store on a worker
    thread, not in the event loop every request waits on (a health check then waited
    for the restore)."""
    snapshot = double.save(subject="restored slowly")
    sid = snapshot.get_first("$uniqueid")
    newer_id = double.save(**{"$uniqueid": origin_id(sid)}, subject="changed").get_first(
        "$uniqueid"
    )
    eventually(lambda: wf_live.archive.exists(sid) and wf_live.archive.exists(newer_id))
    posts = double.stats.posts
    double.delays["POST"] = 6.0
    try:
        with (
            wf_live.socket_client("manager") as manager,
            wf_live.socket_client() as anyone,
            ThreadPoolExecutor(1) as pool,
        ):
            restoring = pool.submit(
                manager.post, f"/ui/actions/restore/{sid}", data={"confirm": "yes"}
            )
            eventually(lambda: double.stats.posts > posts, timeout=30)  # in the workflow
            assert anyone.get("/healthz").status_code == 200
            assert not restoring.done()  # answered while the restore waits
            answer = restoring.result()
    finally:
        double.delays.pop("POST", None)
    assert answer.status_code == 303
    assert "restored" in answer.headers["location"], answer.headers["location"]
