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

import base64
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

from imixs_archive.errors import ConfigError
from imixs_archive.workflow.errors import WorkflowAuthError, WorkflowUnavailableError
from imixs_archive.workflow.transport import Reply

Sender = Callable[[str, dict[str, str]], Reply]
"""Posts a form to a URL without authentication (logins and token requests)."""

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


class Auth(ABC):
    """Adds credentials to the client's requests. When the workflow refuses them
    (:meth:`refused`), the client calls :meth:`renew` and sends the request once more."""

    @abstractmethod
    def apply(self, headers: dict[str, str]) -> int:
        """Add the credentials to a request's headers; a token to pass to :meth:`renew`."""

    def refused(self, status: int, content_type: str) -> bool:
        """Whether this answer means: the credentials must be renewed (fixed ones can't)."""
        return False

    @abstractmethod
    def renew(self, generation: int) -> None:
        """Obtain new credentials, unless another thread did since ``generation``."""


class HeaderAuth(Auth):
    """A fixed header on every request."""

    def __init__(self, name: str, value: str) -> None:
        self.header = (name, value)

    def apply(self, headers: dict[str, str]) -> int:
        headers[self.header[0]] = self.header[1]
        return 0

    def renew(self, generation: int) -> None:
        """Nothing to renew: ``refused`` is never true for fixed credentials."""


class BasicAuth(HeaderAuth):
    """``BASIC``: user and password in every request."""

    def __init__(self, user: str, password: str) -> None:
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        super().__init__("Authorization", f"Basic {pair}")


class CookieAuth(HeaderAuth):
    """A fixed cookie (``COOKIE``: the user is its name, the password its value)."""

    def __init__(self, name: str, value: str) -> None:
        super().__init__("Cookie", f"{name}={value}")


class BearerAuth(HeaderAuth):
    """A bearer token given directly (a JWT)."""

    def __init__(self, token: str) -> None:
        super().__init__("Authorization", f"Bearer {token}")


class SessionAuth(Auth):
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

    def apply(self, headers: dict[str, str]) -> int:
        with self._lock:
            if self._credential is None or self._expired():
                self._login(refused=False)
            self._put(headers, self._credential or "")
            return self._generation

    def renew(self, generation: int) -> None:
        with self._lock:
            if self._credential is None or self._generation == generation:
                # Nobody renewed it since the refused request was sent: do it now.
                self._login(refused=True)

    def _login(self, *, refused: bool) -> None:
        if self._sender is None:
            raise RuntimeError("SessionAuth.bind() was not called")
        self._credential = self._obtain(self._sender, refused=refused)
        self._generation += 1
        self.logins += 1

    @abstractmethod
    def _obtain(self, send: Sender, *, refused: bool = False) -> str:
        """Log in; the credential. ``refused``: the current one was just refused."""

    @abstractmethod
    def _put(self, headers: dict[str, str], credential: str) -> None: ...

    def _expired(self) -> bool:
        return False

    def refused(self, status: int, content_type: str) -> bool:
        return status == 401


class FormAuth(SessionAuth):
    """``FORM``: log in at ``j_security_check``, send the session cookie; log in again when
    the workflow answers 401/403 or its login page (HTML) instead of data."""

    def __init__(self, login_url: str, user: str, password: str) -> None:
        super().__init__()
        self.login_url = login_url
        self._form = {"j_username": user, "j_password": password}

    def _obtain(self, send: Sender, *, refused: bool = False) -> str:
        reply = send(self.login_url, self._form)
        if reply.status >= 500:
            raise WorkflowUnavailableError(
                f"login at {self.login_url}: HTTP {reply.status}", reply.status
            )
        session = _session_cookie(reply)
        if reply.status >= 400 or not session:
            raise WorkflowAuthError(
                f"FORM login at {self.login_url} refused (HTTP {reply.status})", reply.status
            )
        return session

    def _put(self, headers: dict[str, str], credential: str) -> None:
        headers["Cookie"] = f"{SESSION_COOKIE}={credential}"

    def refused(self, status: int, content_type: str) -> bool:
        if status in (401, 403):
            return True
        # An expired session gets the login form (or a redirect to it) instead of data.
        return status in (200, 302, 303) and content_type.startswith("text/html")


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
            reply = send(self.token_url, {**self._client, **grant})
            if reply.status == 200:
                return self._accept(reply, now)
        grant = {"grant_type": "password", **self._user}
        reply = send(self.token_url, {**self._client, **grant})
        if reply.status >= 500:
            raise WorkflowUnavailableError(
                f"token endpoint {self.token_url}: HTTP {reply.status}", reply.status
            )
        if reply.status != 200:
            raise WorkflowAuthError(
                f"OIDC login at {self.token_url} refused (HTTP {reply.status})", reply.status
            )
        return self._accept(reply, now)

    def _accept(self, reply: Reply, now: float) -> str:
        try:
            answer = json.loads(reply.body)
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

    def _put(self, headers: dict[str, str], credential: str) -> None:
        headers["Authorization"] = f"Bearer {credential}"


def _session_cookie(reply: Reply) -> str:
    """The session id a login answer sets (``Set-Cookie: JSESSIONID=...``), or ''."""
    for header in reply.headers.get_all("Set-Cookie") or []:
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(str(header))
        except CookieError:
            continue
        if SESSION_COOKIE in cookie and cookie[SESSION_COOKIE].value:
            return cookie[SESSION_COOKIE].value
    return ""


def make_auth(credentials: Credentials, endpoint: str) -> Auth | None:
    """The ``Auth`` for these credentials (None: no authentication configured)."""
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
        return BasicAuth(user, password)
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
