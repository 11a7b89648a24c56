"""Access control over HTTP (the app in process, see live.py): every endpoint with
anonymous, reader and manager."""

from __future__ import annotations

import pytest

from web.live import BIG_ORIGIN, LiveServer

SNAPSHOT = f"{BIG_ORIGIN}-1700000000000"
READ_ENDPOINTS = [
    f"/api/archive/snapshot/{SNAPSHOT}",
    f"/api/archive/snapshot/{SNAPSHOT}/file/note.txt",
    "/api/archive/md5/00000000000000000000000000000000",
    "/api/archive/metadata",
    "/api/metadata/",
    f"/api/archive/instances/{BIG_ORIGIN}/snapshots",
    "/api/archive/snapshots?from=2023-11-01",
    "/api/stats",
    "/api/stats/dashboard",
    "/api/jobs",
    "/api/verify",
    "/api/scrub",
    "/api/backup",
    "/api/sync/status",
    "/api/sync/deadletters",
    "/api/restore",
    "/metrics",
]
WRITE_ENDPOINTS = [
    ("DELETE", f"/api/archive/snapshot/{SNAPSHOT}", None),
    ("POST", "/api/archive/snapshot", None),
    ("POST", "/api/verify", None),
    ("POST", "/api/backup", {}),
    ("POST", "/api/jobs/verify/stop", None),
    ("POST", "/api/sync/resync", {}),
    ("POST", "/api/sync/resync/stop", None),
    ("POST", "/api/sync/deadletters/e1/retry", None),
    ("POST", "/api/restore", {"from": "2024-01-01", "to": "2024-12-31"}),
    ("POST", "/api/restore/stop", None),
    ("POST", f"/api/restore/snapshot/{SNAPSHOT}", None),
]


def assert_problem(answer: object, status: int) -> dict[str, object]:
    import httpx

    assert isinstance(answer, httpx.Response)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["status"] == status and isinstance(body["message"], str) and body["title"]
    assert "Traceback" not in answer.text
    return dict(body)


@pytest.mark.parametrize("path", READ_ENDPOINTS)
def test_anonymous_gets_401_everywhere(live: LiveServer, path: str) -> None:
    with live.client() as client:
        answer = client.get(path)
    assert_problem(answer, 401)
    assert answer.headers["www-authenticate"].startswith("Basic realm=")


@pytest.mark.parametrize(("method", "path", "body"), WRITE_ENDPOINTS)
def test_anonymous_cannot_change_anything(
    live: LiveServer, method: str, path: str, body: object
) -> None:
    with live.client() as client:
        assert_problem(client.request(method, path, json=body), 401)


@pytest.mark.parametrize("who", ["reader", "token-reader"])
@pytest.mark.parametrize(("method", "path", "body"), WRITE_ENDPOINTS)
def test_a_reader_cannot_delete_restore_or_start_jobs(
    live: LiveServer, who: str, method: str, path: str, body: object
) -> None:
    with live.client(who) as client:
        problem = assert_problem(client.request(method, path, json=body), 403)
    assert "needs a manager" in str(problem["message"])
    assert live.archive.exists(SNAPSHOT)


@pytest.mark.parametrize("who", ["reader", "manager", "token-reader", "token-manager"])
def test_readers_and_managers_read(live: LiveServer, who: str) -> None:
    with live.client(who) as client:
        for path in READ_ENDPOINTS:
            answer = client.get(path)
            # Not found / not run yet / not configured are answers too, never 401/403.
            assert answer.status_code in (200, 404, 503), (path, answer.text)
        assert client.get(f"/api/archive/snapshot/{SNAPSHOT}").status_code == 200


def test_wrong_credentials_are_401(live: LiveServer) -> None:
    cases = [
        {"auth": ("rex", "wrong")},
        {"auth": ("nobody", "rex-secret")},
        {"headers": {"Authorization": "Bearer not-a-token"}},
        {"headers": {"Authorization": "Basic !!!"}},
        {"headers": {"Authorization": "Digest abc"}},
    ]
    for kwargs in cases:
        with live.client(**kwargs) as client:
            assert_problem(client.get("/api/stats"), 401)


def test_health_is_public(live: LiveServer) -> None:
    with live.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["store"]["ok"] is True


def test_microprofile_health_paths_of_the_java_service(live: LiveServer) -> None:
    """Probes written for the Java service (WildFly's /health) keep working."""
    with live.client() as client:
        health = client.get("/health")
        live_only = client.get("/health/live")
        ready = client.get("/health/ready")
    assert health.status_code == live_only.status_code == ready.status_code == 200
    body = health.json()
    assert body["status"] == "UP"
    java_check = body["checks"][0]
    assert java_check["name"] == "imixs-archive" and java_check["status"] == "UP"
    assert java_check["data"]["archive.version"]
    assert live_only.json()["checks"] == [java_check]
    assert ready.json()["checks"][0]["data"]["store"] == "reachable"


def test_cross_site_writes_are_refused(live: LiveServer) -> None:
    with live.client("manager", headers={"Origin": "https://evil.example"}) as client:
        problem = assert_problem(client.delete(f"/api/archive/snapshot/{SNAPSHOT}"), 403)
        assert "another origin" in str(problem["message"])
        assert client.get("/api/stats").status_code == 200  # reads are harmless
    with live.client("manager", headers={"Sec-Fetch-Site": "cross-site"}) as client:
        assert_problem(client.post("/api/verify"), 403)
    assert live.archive.exists(SNAPSHOT)


def test_open_service_lets_local_callers_manage(open_live: LiveServer) -> None:
    with open_live.client() as client:
        assert client.get("/api/stats").status_code == 200
        answer = client.delete(f"/api/archive/snapshot/{BIG_ORIGIN}-1700000000000")
        assert answer.status_code == 200 and answer.json()["deleted"] is True
        # Another Host (a DNS-rebinding page) is refused.
        assert_problem(client.get("/api/stats", headers={"Host": "evil.example"}), 403)


def test_ui_needs_a_login_and_the_login_works(live: LiveServer) -> None:
    with live.client() as client:
        answer = client.get("/ui/monitor")
        assert answer.status_code == 303 and answer.headers["location"].startswith("/login")
        wrong = client.post("/login", data={"username": "rex", "password": "x", "next": "/"})
        assert wrong.status_code == 303 and "error=" in wrong.headers["location"]
        login = client.post(
            "/login", data={"username": "rex", "password": "rex-secret", "next": "/ui/stats"}
        )
        assert login.status_code == 303 and login.headers["location"] == "/ui/stats"
        assert "httponly" in login.headers["set-cookie"].lower()
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        page = client.get("/ui/monitor")
        assert page.status_code == 200 and "rex" in page.text
        # The cookie works for the API too, with the reader's rights.
        assert client.get("/api/stats").status_code == 200
        assert client.post("/api/verify").status_code == 403
        client.post("/logout")
        assert client.get("/ui/monitor").status_code == 303


def test_login_redirects_only_within_the_site(live: LiveServer) -> None:
    with live.client() as client:
        login = client.post(
            "/login",
            data={"username": "rex", "password": "rex-secret", "next": "//evil.example/x"},
        )
    assert login.headers["location"] == "/ui/monitor"
