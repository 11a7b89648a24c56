"""The API's contract: problem details with RFC 9457's ``detail``, bad input to web
pages answered with a page, job status before the first run, the OpenAPI description
against what the routes answer, request metrics of static files."""

from __future__ import annotations

from pathlib import Path

from web.live import BIG_ORIGIN, LiveServer, credentials_env, serve_store


def test_problem_details_carry_detail_and_message(live: LiveServer) -> None:
    with live.socket_client("reader") as client:
        answer = client.get("/api/archive/snapshot/no-such-snapshot")
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["status"] == answer.status_code >= 400
    assert body["detail"] and body["detail"] == body["message"]


def test_a_web_page_answers_bad_input_with_a_page(live: LiveServer) -> None:
    with live.socket_client("reader") as client:
        answer = client.get("/ui/inspect", params={"from": "banana"})
        api = client.get("/api/archive/snapshots", params={"from": "banana"})
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("text/html")
    assert "from" in answer.text and "<html" in answer.text.lower()
    assert api.status_code == 400 and api.headers["content-type"] == "application/problem+json"


def test_job_status_before_the_first_run_is_an_answer_not_a_404(tmp_path: Path) -> None:
    """A service of its own: the session's servers may have run the jobs already."""
    for live in serve_store(tmp_path, credentials_env()):
        with live.socket_client("reader") as client:
            for path, name in [
                ("/api/verify", "verify"),
                ("/api/backup", "backup"),
                ("/api/jobs/verify", "verify"),
                ("/api/jobs/resync", "resync"),
                ("/api/jobs/restore", "restore"),
                ("/api/ledger/verify", "ledger-verify"),
            ]:
                answer = client.get(path)
                assert answer.status_code == 200, (path, answer.text)
                status = answer.json()
                assert status["name"] == name and status["state"] == "not_run", path
                assert status["active"] is False and status["started"] is None
                assert "has not run since the service started" in status["message"]
            listed = client.get("/api/jobs").json()
            assert {s["name"] for s in listed} >= {"verify", "backup", "resync", "restore"}
            assert client.get("/api/jobs/nonsense").status_code == 404
        with live.socket_client("manager") as client:
            stopped = client.post("/api/jobs/backup/stop")
            assert stopped.status_code == 200 and stopped.json()["state"] == "not_run"


def test_static_files_are_counted_under_their_mount_not_as_unmatched(live: LiveServer) -> None:
    label = 'imixs_archive_http_requests_total{method="GET",route="%s",status="200"}'

    def count(text: str, route: str) -> float:
        for line in text.splitlines():
            if line.startswith(label % route):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    with live.socket_client("reader") as client:
        before = client.get("/metrics").text
        for name in ("app.css", "app.js", "favicon.svg"):
            assert client.get(f"/static/{name}").status_code == 200
        after = client.get("/metrics").text
    assert count(after, "/static") - count(before, "/static") == 3
    assert count(after, "unmatched") == count(before, "unmatched")


JOB_STARTS = [
    ("post", "/api/verify"),
    ("post", "/api/backup"),
    ("post", "/api/sync/resync"),
    ("post", "/api/restore"),
    ("post", "/api/restore/instance/{uniqueid}"),
    ("post", "/api/restore/source"),
    ("post", "/api/ledger/verify"),
]


def test_the_openapi_description_declares_what_the_routes_answer(live: LiveServer) -> None:
    with live.socket_client() as client:
        spec = client.get("/api/openapi.json").json()
    operations = [
        (method, path, operation)
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
    ]
    assert len(operations) > 40
    for method, path, operation in operations:
        declared = set(operation["responses"])
        where = f"{method.upper()} {path}"
        # Validation errors are answered 400, never 422.
        assert "422" not in declared, where
        if operation.get("parameters") or operation.get("requestBody"):
            assert "400" in declared, where
        # Every success answer says what it holds.
        for code in declared & {"200", "201", "202", "206"}:
            content = operation["responses"][code].get("content")
            assert content, (where, code)
            if "application/json" in content:
                assert content["application/json"]["schema"], (where, code)
    assert "ValidationError" not in str(spec["components"]["schemas"])
    for method, path in JOB_STARTS:
        assert "409" in spec["paths"][path][method]["responses"], path
    assert "409" in spec["paths"]["/api/archive/snapshot/{snapshot_id}"]["delete"]["responses"]
    for path in ("/readyz", "/health", "/health/ready", "/healthz"):
        assert "503" in spec["paths"][path]["get"]["responses"], path
    assert {"200", "401", "403"} <= set(spec["paths"]["/metrics"]["get"]["responses"])
    for path in ("/api/verify", "/api/backup", "/api/jobs/{name}"):
        schema = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        assert schema["schema"] == {"$ref": "#/components/schemas/JobStatusAnswer"}, path
    states = spec["components"]["schemas"]["JobStatusAnswer"]["properties"]["state"]
    assert "not_run" in str(states)
    metadata = spec["paths"]["/api/metadata/"]["get"]["description"]
    assert "sync.count" in metadata and "/api/stats" in metadata


def test_the_declared_codes_hold_for_real_answers(live: LiveServer) -> None:
    with live.socket_client() as anonymous:
        spec = anonymous.get("/api/openapi.json").json()["paths"]
    calls = [
        ("get", "/api/archive/snapshots", "/api/archive/snapshots?from=banana"),
        ("get", "/api/archive/snapshots", "/api/archive/snapshots?from=2024-01-01&limit=0"),
        (
            "get",
            "/api/archive/instances/{uniqueid}/snapshots",
            "/api/archive/instances/x/snapshots?limit=x",
        ),
        ("get", "/api/analytics/aggregates", "/api/analytics/aggregates"),
        ("get", "/api/archive/md5/{md5}", "/api/archive/md5/00?contentType=%00"),
        ("get", "/api/verify", "/api/verify"),
        ("get", "/api/backup", "/api/backup"),
        ("get", "/readyz", "/readyz"),
        ("get", "/metrics", "/metrics"),
    ]
    with live.socket_client("reader") as client:
        for method, template, url in calls:
            answer = client.request(method.upper(), url)
            declared = spec[template][method]["responses"]
            assert str(answer.status_code) in declared, (url, answer.status_code, sorted(declared))


def test_the_banners_show_only_what_the_app_put_there(live: LiveServer) -> None:
    bad = "banner bad"
    with live.socket_client("manager") as client:
        forged = client.get("/ui/monitor", params={"error": "Call +1 555 0100", "notice": "ok!"})
        assert forged.status_code == 200
        assert "Call +1 555 0100" not in forged.text and "ok!" not in forged.text
        assert bad not in forged.text
        sealed = client.get("/ui/monitor", params={"error": "x", "seal": "99999999999.AAAA"})
        assert bad not in sealed.text
        # A form action's own message still shows, its seal tied to its text.
        moved = client.post(f"/ui/actions/delete/{BIG_ORIGIN}-1700000000000", data={})
        assert moved.status_code == 303
        target = moved.headers["location"]
        shown = client.get(target)
        assert bad in shown.text and "tick the box to confirm the delete" in shown.text
        altered = client.get(target.replace("tick", "untick"))
        assert bad not in altered.text
