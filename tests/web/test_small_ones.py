"""The small ones of the hardening probe: odd file names and content types download,
error bodies stay short, strict snapshot ids and base64, /readyz on a full disk, the
OpenAPI description lists error answers and the push body."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

import pytest

from support.snapshots import file_values, make_snapshot
from web.live import LiveServer, serve_store

ODD = "11111111-0000-4000-8000-00000000cr1f"


def test_a_file_with_cr_lf_in_its_name_and_type_downloads(live: LiveServer) -> None:
    name = "evil\r\nSet-Cookie: x=1.txt"
    doc = make_snapshot(
        0,
        origin="0dd0dd00-0000-4000-8000-000000000001",
        files={name: file_values(b"payload", "text/plain\r\nX-Injected: 1")},
    )
    live.archive.store(doc)
    snapshot = doc["$uniqueid"][0]
    with live.client("reader") as client:
        answer = client.get(f"/api/archive/snapshot/{snapshot}/file/{quote(name)}")
    assert answer.status_code == 200 and answer.content == b"payload"
    assert "x-injected" not in answer.headers and "set-cookie" not in answer.headers
    assert answer.headers["content-type"] == "application/octet-stream"
    assert "\r" not in answer.headers["content-disposition"]


def test_error_bodies_do_not_echo_the_input(live: LiveServer) -> None:
    huge = "k" * 900_000
    with live.client("manager") as client:
        answer = client.post(
            "/api/archive/snapshot",
            content='{"' + huge + '": 1}',
            headers={"Content-Type": "application/json"},
        )
    assert answer.status_code in (400, 413)
    assert len(answer.content) < 10_000


@pytest.mark.parametrize(
    "snapshot_id",
    ["270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000\n"],
)
def test_a_snapshot_id_with_a_trailing_newline_is_refused(
    live: LiveServer, snapshot_id: str
) -> None:
    with live.client("reader") as client:
        answer = client.get(f"/api/archive/snapshot/{quote(snapshot_id)}")
    assert answer.status_code == 400
    assert "is not a snapshot id" in answer.json()["message"]


def test_the_openapi_description_lists_errors_and_the_push_body(live: LiveServer) -> None:
    with live.client() as client:
        spec = client.get("/api/openapi.json").json()
    push = spec["paths"]["/api/archive/snapshot"]["post"]
    body = push["requestBody"]["content"]
    assert {"application/xml", "application/json"} <= set(body)
    assert {"400", "401", "403", "413"} <= set(push["responses"])
    listing = spec["paths"]["/api/archive/snapshots"]["get"]["responses"]
    assert {"400", "401", "503"} <= set(listing)
    assert "application/problem+json" in listing["400"]["content"]


@pytest.mark.parametrize("free", [("10", 200), ("100000000", 503)], ids=["room", "full"])
def test_readyz_says_not_ready_when_the_disk_is_full(tmp_path: Path, free: tuple[str, int]) -> None:
    setting, status = free
    for live in serve_store(tmp_path, {"ARCHIVE_MIN_FREE_MB": setting}):
        with live.client() as client:
            answer = client.get("/readyz")
        assert answer.status_code == status
        if status == 503:
            assert "ARCHIVE_MIN_FREE_MB" in answer.json()["checks"]["store"]["message"]


def test_a_client_leaving_mid_upload_is_no_error_with_a_traceback(
    live: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    import base64
    import socket
    import time

    host, port = live.url.removeprefix("http://").split(":")
    auth = base64.b64encode(b"mia:mia-secret").decode()
    with caplog.at_level(logging.INFO), socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            (
                "POST /api/archive/snapshot HTTP/1.1\r\n"
                f"Host: {host}:{port}\r\nAuthorization: Basic {auth}\r\n"
                "Content-Type: application/xml\r\nContent-Length: 500000\r\n\r\n<data>"
            ).encode()
        )
        time.sleep(0.3)
    time.sleep(0.5)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [r for r in caplog.records if r.exc_info]
