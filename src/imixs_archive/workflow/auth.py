"""Authentication against Imixs-Workflow: the methods the Java client supports, and more.

``BASIC``; ``FORM`` (``POST j_security_check`` with ``j_username``/``j_password``, then the
``JSESSIONID`` session cookie, logging in again when the session expires); ``COOKIE``
(user = cookie name, password = value); ``OIDC`` (password grant at the token endpoint
with client id and secret, the bearer token refreshed before it expires or when refused);
``JWT`` (alias ``BEARER``): a token given directly.

Credentials obtained by a login are shared by every thread: one thread logs in, the
others wait for it and use the result (``SessionAuth``).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from dataclasses import dataclass

import httpx

from imixs_archive.errors import ConfigError
from imixs_archive.workflow.errors import WorkflowAuthError, WorkflowUnavailableError

Sender = Callable[[httpx.Request], httpx.Response]
"""Sends one request without authentication (logins and token requests)."""

METHODS = ("BASIC", "FORM", "COOKIE", "OIDC", "JWT", "BEARER")
SESSION_COOKIE = "JSESSIONID"
TOKEN_MARGIN = 30.0
"""Seconds before its expiry at which an OIDC token is refreshed."""


@dataclass(frozen=True)
class Credentials:
    """What the settings say about authentication (see ``make_auth``)."""

    method: str = "BASIC"
    user: str = ""
    password: str = ""
    token: str = ""
    oidc_endpoint: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = ""


class CookieAuth(httpx.Auth):
    """A fixed cookie (``COOKIE``: the user is its name, the password its value)."""

    def __init__(self, name: str, value: str) -> None:
        self._cookie = f"{name}={value}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Cookie"] = self._cookie
        yield request


class BearerAuth(httpx.Auth):
    """A bearer token given directly (a JWT)."""

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


class SessionAuth(httpx.Auth, ABC):
    """A credential obtained by a login, renewed when it expires or the workflow refuses it.

    ``bind`` gives it the sender for its own login requests (the workflow client does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credential: str | None = None
        self._generation = 0
        self._sender: Sender | None = None
        self.logins = 0
        """How many times a credential was obtained (for tests and metrics)."""

    def bind(self, sender: Sender) -> None:
        self._sender = sender

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        credential, generation = self._current()
        self._apply(request, credential)
        response = yield request
        if not self._refused(response):
            return
        credential = self._renew(generation)
        self._apply(request, credential)
        yield request

    def _current(self) -> tuple[str, int]:
        with self._lock:
            if self._credential is None or self._expired():
                self._credential = self._obtain(self._send)
                self._generation += 1
                self.logins += 1
            return self._credential, self._generation

    def _renew(self, generation: int) -> str:
        with self._lock:
            if self._credential is None or self._generation == generation:
                # Nobody renewed it since this request was sent: do it now.
                self._credential = self._obtain(self._send, refused=True)
                self._generation += 1
                self.logins += 1
            return self._credential

    def _send(self, request: httpx.Request) -> httpx.Response:
        if self._sender is None:
            raise RuntimeError("SessionAuth.bind() was not called")
        try:
            return self._sender(request)
        except httpx.TransportError as exc:
            raise WorkflowUnavailableError(
                f"login at {request.url} failed: {type(exc).__name__}: {exc}",
                down=isinstance(exc, httpx.ConnectError),
            ) from exc

    @abstractmethod
    def _obtain(self, send: Sender, *, refused: bool = False) -> str:
        """Log in; the credential. ``refused``: the current one was just refused."""

    @abstractmethod
    def _apply(self, request: httpx.Request, credential: str) -> None: ...

    def _expired(self) -> bool:
        return False

    def _refused(self, response: httpx.Response) -> bool:
        return response.status_code == 401


class FormAuth(SessionAuth):
    """``FORM``: log in at ``j_security_check``, send the session cookie; log in again when
    the workflow answers 401/403 or its login page (HTML) instead of data."""

    def __init__(self, login_url: str, user: str, password: str) -> None:
        super().__init__()
        self.login_url = login_url
        self._form = {"j_username": user, "j_password": password}

    def _obtain(self, send: Sender, *, refused: bool = False) -> str:
        response = send(httpx.Request("POST", self.login_url, data=self._form))
        if response.status_code >= 500:
            raise WorkflowUnavailableError(
                f"login at {self.login_url}: HTTP {response.status_code}", response.status_code
            )
        session = response.cookies.get(SESSION_COOKIE)
        if response.status_code >= 400 or not session:
            raise WorkflowAuthError(
                f"FORM login at {self.login_url} refused (HTTP {response.status_code})",
                response.status_code,
            )
        return str(session)

    def _apply(self, request: httpx.Request, credential: str) -> None:
        request.headers["Cookie"] = f"{SESSION_COOKIE}={credential}"

    def _refused(self, response: httpx.Response) -> bool:
        if response.status_code in (401, 403):
            return True
        content_type = response.headers.get("content-type", "")
        # An expired session gets the login form (or a redirect to it) instead of data.
        return response.status_code in (200, 302, 303) and content_type.startswith("text/html")


class OidcAuth(SessionAuth):
    """``OIDC``: resource-owner password grant at the token endpoint; the access token is
    refreshed with the refresh token shortly before it expires, and when refused."""

    def __init__(
        self, token_url: str, client_id: str, client_secret: str, user: str, password: str
    ) -> None:
        super().__init__()
        self.token_url = token_url
        self._client = {"client_id": client_id}
        if client_secret:
            self._client["client_secret"] = client_secret
        self._user = {"username": user, "password": password}
        self._expires_at = 0.0
        self._refresh_token = ""
        self._refresh_expires_at = 0.0

    def _obtain(self, send: Sender, *, refused: bool = False) -> str:
        now = time.monotonic()
        if self._refresh_token and now < self._refresh_expires_at - TOKEN_MARGIN:
            grant = {"grant_type": "refresh_token", "refresh_token": self._refresh_token}
            response = send(httpx.Request("POST", self.token_url, data={**self._client, **grant}))
            if response.status_code == 200:
                return self._accept(response, now)
        grant = {"grant_type": "password", **self._user}
        response = send(httpx.Request("POST", self.token_url, data={**self._client, **grant}))
        if response.status_code >= 500:
            raise WorkflowUnavailableError(
                f"token endpoint {self.token_url}: HTTP {response.status_code}",
                response.status_code,
            )
        if response.status_code != 200:
            raise WorkflowAuthError(
                f"OIDC login at {self.token_url} refused (HTTP {response.status_code})",
                response.status_code,
            )
        return self._accept(response, now)

    def _accept(self, response: httpx.Response, now: float) -> str:
        try:
            answer = response.json()
            token = str(answer["access_token"])
        except (ValueError, KeyError, TypeError):
            raise WorkflowAuthError(
                f"OIDC token endpoint {self.token_url} gave no access_token"
            ) from None
        self._expires_at = now + float(answer.get("expires_in", 300))
        self._refresh_token = str(answer.get("refresh_token", ""))
        self._refresh_expires_at = now + float(answer.get("refresh_expires_in", 1800))
        return token

    def _expired(self) -> bool:
        return time.monotonic() >= self._expires_at - TOKEN_MARGIN

    def _apply(self, request: httpx.Request, credential: str) -> None:
        request.headers["Authorization"] = f"Bearer {credential}"


def make_auth(credentials: Credentials, endpoint: str) -> httpx.Auth | None:
    """The httpx ``Auth`` for these credentials (None: no authentication configured)."""
    method = (credentials.method or "BASIC").strip().upper()
    user, password = credentials.user, credentials.password
    if method not in METHODS:
        raise ConfigError(
            f"WORKFLOW_SERVICE_AUTHMETHOD: {credentials.method!r} is not one of "
            + ", ".join(METHODS)
        )
    if method in ("JWT", "BEARER") or (credentials.token and not user):
        if not credentials.token:
            raise ConfigError(f"{method} needs a token (WORKFLOW_SERVICE_TOKEN)")
        return BearerAuth(credentials.token)
    if not user:
        return None
    if method == "BASIC":
        return httpx.BasicAuth(user, password)
    if method == "COOKIE":
        return CookieAuth(user, password)
    if method == "FORM":
        return FormAuth(endpoint.rstrip("/") + "/j_security_check", user, password)
    if not credentials.oidc_endpoint:
        raise ConfigError("OIDC needs the token endpoint (OIDC_AUTH_ENDPOINT)")
    return OidcAuth(
        credentials.oidc_endpoint,
        credentials.oidc_client_id,
        credentials.oidc_client_secret,
        user,
        password,
    )
