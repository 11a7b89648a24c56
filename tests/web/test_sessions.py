"""Login sessions: unknown names cost what wrong passwords cost, logout ends the session,
the Secure flag follows the scheme a trusted proxy reports (or the setting)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from imixs_archive.config import load_settings
from imixs_archive.web import credentials
from imixs_archive.web.auth import SESSION_COOKIE, Authenticator
from imixs_archive.web.credentials import hash_password
from web.live import PASSWORDS, LiveServer, credentials_env, serve_store


def test_an_unknown_name_costs_as_much_hashing_as_a_wrong_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted in PBKDF2 rounds, not timed: the best of three timings of each was compared
    (more than half), which a load spike over one of them could tip either way."""
    users = f"ann:reader:{hash_password('right', iterations=200_000)}"
    auth = Authenticator(load_settings({"ARCHIVE_USERS": users}))
    rounds: list[int] = []

    def pbkdf2_hmac(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        rounds.append(iterations)
        return hashlib.pbkdf2_hmac(name, password, salt, iterations)

    monkeypatch.setattr(credentials, "hashlib", SimpleNamespace(pbkdf2_hmac=pbkdf2_hmac))

    def hashed(name: str) -> list[int]:
        rounds.clear()
        for attempt in range(3):
            assert auth.check_password(name, f"wrong-{attempt}") is None
        return list(rounds)

    assert hashed("ann") == hashed("nobody") == [200_000] * 3


def test_a_session_cookie_stops_working_at_logout(live: LiveServer) -> None:
    with live.client() as client:
        login = client.post(
            "/login", data={"username": "rex", "password": PASSWORDS["rex"], "next": "/"}
        )
        assert login.status_code == 303
        cookie = client.cookies[SESSION_COOKIE]
        client.post("/logout")
    with live.client(cookies={SESSION_COOKIE: cookie}) as replay:
        assert replay.get("/api/stats").status_code == 401


@pytest.fixture
def proxied(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    yield from serve_store(tmp_path, {**credentials_env(), **request.param})


def _login_cookie_header(live: LiveServer, headers: dict[str, str]) -> str:
    with httpx.Client(base_url=live.url, headers=headers) as client:
        login = client.post(
            "/login", data={"username": "rex", "password": PASSWORDS["rex"], "next": "/"}
        )
    assert login.status_code == 303
    return login.headers["set-cookie"].lower()


@pytest.mark.parametrize("proxied", [{"ARCHIVE_TRUSTED_PROXIES": "127.0.0.1"}], indirect=True)
def test_the_secure_flag_follows_a_trusted_proxy(proxied: LiveServer) -> None:
    assert "secure" in _login_cookie_header(proxied, {"X-Forwarded-Proto": "https"})
    assert "secure" not in _login_cookie_header(proxied, {"X-Forwarded-Proto": "http"})
    assert "secure" not in _login_cookie_header(proxied, {})


@pytest.mark.parametrize("proxied", [{}], indirect=True)
def test_an_untrusted_peer_cannot_claim_https(proxied: LiveServer) -> None:
    assert "secure" not in _login_cookie_header(proxied, {"X-Forwarded-Proto": "https"})


@pytest.mark.parametrize("proxied", [{"ARCHIVE_COOKIE_SECURE": "always"}], indirect=True)
def test_the_secure_flag_by_setting(proxied: LiveServer) -> None:
    assert "secure" in _login_cookie_header(proxied, {})
