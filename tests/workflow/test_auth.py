"""Every authentication method against the double, including expiry and re-login."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from imixs_archive.workflow import Credentials, WorkflowAuthError, WorkflowClient, auth
from imixs_archive.workflow.auth import SessionAuth
from support.workflow_double import WorkflowDouble


def _client(double: WorkflowDouble, method: str, **kw: str) -> WorkflowClient:
    credentials = Credentials(
        method=method,
        user=kw.get("user", double.user),
        password=kw.get("password", double.password),
        token=kw.get("token", ""),
        oidc_endpoint=double.token_url,
        oidc_client_id=double.client_id,
        oidc_client_secret=double.client_secret,
    )
    return WorkflowClient(double.url, credentials=credentials, read_timeout=5)


@pytest.mark.parametrize("method", ["BASIC", "FORM", "COOKIE", "OIDC"])
def test_each_method_reads_the_event_log(method: str) -> None:
    with WorkflowDouble(auth=method) as double, _client(double, method) as client:
        double.save()
        assert len(client.read_events()) == 1
        with client.stream_document(client.read_events()[0].ref) as blocks:
            assert b"<document>" in b"".join(blocks)


@pytest.mark.parametrize("method", ["BASIC", "FORM", "COOKIE", "OIDC"])
def test_wrong_password_is_an_auth_error(method: str) -> None:
    with (
        WorkflowDouble(auth=method) as double,
        _client(double, method, password="wrong") as client,
        pytest.raises(WorkflowAuthError),
    ):
        client.read_events()


def test_jwt_token_given_directly() -> None:
    with WorkflowDouble(auth="JWT", token="the-token") as double:
        with _client(double, "JWT", user="", token="the-token") as client:
            assert client.read_events() == []
        with (
            _client(double, "JWT", user="", token="another") as client,
            pytest.raises(WorkflowAuthError),
        ):
            client.read_events()


def test_form_logs_in_again_when_the_session_expires() -> None:
    with WorkflowDouble(auth="FORM") as double, _client(double, "FORM") as client:
        double.save()
        client.read_events()
        assert double.stats.logins == 1
        double.expire_sessions()
        [event] = client.read_events()
        assert double.stats.logins == 2
        double.expire_sessions()
        with client.stream_document(event.ref) as blocks:  # a stream re-logs in too
            assert b"<document>" in b"".join(blocks)
        assert double.stats.logins == 3


def test_form_one_login_for_many_threads() -> None:
    with WorkflowDouble(auth="FORM") as double, _client(double, "FORM") as client:
        errors: list[BaseException] = []

        def read() -> None:
            try:
                for _ in range(5):
                    client.read_events()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=read) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert double.stats.logins == 1


def test_oidc_refreshes_a_refused_token() -> None:
    with WorkflowDouble(auth="OIDC") as double, _client(double, "OIDC") as client:
        client.read_events()
        double.expire_sessions()  # the access token is refused from now on
        client.read_events()
        assert double.stats.grants == {"password": 1, "refresh_token": 1}


def test_oidc_refreshes_before_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tokens live 31 s; refreshed 30 s before expiry, i.e. after 1 s: of the client's clock,
    # moved by the test (two requests in the first second were a bet on the machine).
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(auth, "time", SimpleNamespace(monotonic=lambda: clock.now))
    with WorkflowDouble(auth="OIDC", token_seconds=31) as double, _client(double, "OIDC") as client:
        client.read_events()
        clock.now += 0.9
        client.read_events()
        assert double.stats.grants["refresh_token"] == 0
        clock.now += 0.2
        client.read_events()
        assert double.stats.grants == {"password": 1, "refresh_token": 1}
        assert isinstance(client.auth, SessionAuth) and client.auth.logins == 2
