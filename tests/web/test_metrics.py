"""Prometheus metrics: requests by route, store operations, ingests, sync state."""

from __future__ import annotations

from imixs_archive.document.xml_writer import to_xml
from support.snapshots import make_snapshot
from web.live import LiveServer


def value(text: str, prefix: str) -> float:
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {prefix}")


def test_metrics_cover_requests_store_and_ingest(live: LiveServer) -> None:
    doc = make_snapshot(
        30, origin="3e7c0000-0000-4000-8000-000000000030", files={"m.bin": b"m" * 5000}
    )
    with live.client("manager") as client:
        assert client.post("/api/archive/snapshot", content=to_xml(doc)).status_code == 201
        client.get("/api/stats/dashboard")
        text = client.get("/metrics").text
    assert (
        value(
            text,
            'imixs_archive_http_requests_total{method="POST",route="/api/archive/snapshot",status="201"}',
        )
        >= 1
    )
    assert value(text, 'imixs_archive_store_operation_duration_seconds_count{operation="put"') >= 1
    assert value(text, "imixs_archive_stored_piece_bytes_total") >= 5000
    assert value(text, 'imixs_archive_ingested_bytes_total{kind="logical"}') >= 5000
    assert value(text, 'imixs_archive_snapshots_ingested_total{outcome="new",source="push"}') >= 1
    assert value(text, "imixs_archive_sync_configured") == 0
    assert value(text, "imixs_archive_archive_dedup_ratio") >= 1
    assert 'imixs_archive_archive_bytes{kind="stored"}' in text


def test_metrics_need_a_reader(live: LiveServer) -> None:
    with live.client() as client:
        assert client.get("/metrics").status_code == 401
    with live.client("token-reader") as client:
        answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
