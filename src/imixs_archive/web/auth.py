"""Who is calling, and may they: HTTP Basic, API tokens, OIDC bearer tokens, login cookies.

Two roles: ``reader`` (every GET) and ``manager`` (everything that changes data or starts
a job). With no credentials configured at all the service is *open*: every caller is a
manager; ``serve`` allows that only on a loopback address, and the app then also refuses
requests whose ``Host`` is not a loopback name (a DNS-rebinding page cannot reach it).

Requests that change something are refused when a browser says they come from another
site (``Origin`` not this host, or ``Sec-Fetch-Site: cross-site``): cookies and cached
Basic credentials cannot be used by another site's page (no CSRF).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError
from imixs_archive.web.credentials import (
    Role,
    grants,
    has_credentials,
    hash_password,
    is_loopback,
    parse_tokens,
    parse_users,
    token_hash,
    verify_password,
)
from imixs_archive.web.throttle import LoginThrottle

SESSION_COOKIE = "imixs_archive_session"
JAVA_SESSION_COOKIE = "JSESSIONID"
"""The same session under the name the Java clients' FORM login keeps (``java_form.py``)."""
SESSION_SECONDS = 12 * 3600
_CACHE_SIZE = 1024
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    via: str
    """basic, token, oidc, session, or open (no credentials configured)."""

    @property
    def is_manager(self) -> bool:
        return self.role is Role.MANAGER


class NotAuthenticatedError(ArchiveError):
    """401: no credentials, or wrong ones."""


class TooManyLoginsError(NotAuthenticatedError):
    """Too many wrong passwords for a user name in a row: answered 429 with Retry-After."""

    def __init__(self, name: str, wait: float) -> None:
        self.retry_after = max(1, int(wait + 0.999))
        super().__init__(f"too many failed logins for {name!r}: try again in {self.retry_after} s")


class AccessDeniedError(ArchiveError):
    """403: known caller, not allowed (a reader asking to change data; a cross-site request)."""


class TokenVerifier(Protocol):
    def verify(self, token: str) -> Principal | None:
        """The caller a bearer token stands for; None if it is not one of this verifier's."""


class Authenticator:
    def __init__(self, settings: Settings, oidc: TokenVerifier | None = None) -> None:
        self.users = parse_users(settings.users)
        self.tokens = parse_tokens(settings.api_tokens)
        self.open = not has_credentials(settings)
        self.oidc = oidc
        secret = settings.session_secret.encode("utf-8")
        self._secret = secret or secrets.token_bytes(32)
        # Basic credentials already verified (PBKDF2 costs ~0.3 s): keyed by an HMAC of the
        # user and password under a per-process key, so the cache holds no password.
        self._verified: OrderedDict[bytes, Principal] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.throttle = LoginThrottle()
        rounds = max((_rounds(u.password_hash) for u in self.users.values()), default=1000)
        self._dummy_hash = hash_password(secrets.token_urlsafe(16), iterations=rounds)
        self._ended: dict[str, float] = {}  # session nonce -> its expiry, for logouts
        self._ended_lock = threading.Lock()
        self._trusted = {p.strip() for p in settings.trusted_proxies.split(",") if p.strip()}
        self._cookie_secure = settings.cookie_secure

    # ---- identifying callers ---------------------------------------------------------

    def identify(self, conn: HTTPConnection) -> Principal | None:
        header = conn.headers.get("authorization")
        if header:
            scheme, _, value = header.strip().partition(" ")
            if scheme.lower() == "basic":
                return self._basic(value.strip())
            if scheme.lower() == "bearer":
                return self._bearer(value.strip())
            raise NotAuthenticatedError(f"unsupported authorization scheme {scheme!r}")
        cookies = dict(conn.cookies)
        sent = conn.headers.getlist("cookie")
        if any("$" in header or "," in header for header in sent):  # a Java client's
            cookies = java_cookies(sent)
        for name in (SESSION_COOKIE, JAVA_SESSION_COOKIE):
            cookie = cookies.get(name)
            principal = self.read_session(cookie) if cookie else None
            if principal is not None:
                return principal
        if cookies and conn.scope.get("method") in SAFE_METHODS:
            principal = self._cookie_credentials(conn, cookies)
            if principal is not None:
                return principal
        if self.open:
            return Principal("local", Role.MANAGER, "open")
        return None

    def require(self, conn: HTTPConnection, role: Role) -> Principal:
        principal = self.identify(conn)
        if principal is None:
            raise NotAuthenticatedError("authentication required")
        if not grants(principal.role, role):
            raise AccessDeniedError(f"{principal.name} is a {principal.role}; this needs a {role}")
        return principal

    def check_password(self, name: str, password: str) -> Principal | None:
        key = hmac.new(self._secret, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        with self._cache_lock:
            cached = self._verified.get(key)
            if cached is not None:
                self._verified.move_to_end(key)
                return cached
        wait = self.throttle.begin(name)  # counted before hashing: no race past the lock
        if wait > 0:
            raise TooManyLoginsError(name, wait)
        user = self.users.get(name)
        # An unknown name costs the same hashing as a wrong password: names cannot be probed.
        if not verify_password(password, self._dummy_hash if user is None else user.password_hash):
            self.throttle.failed(name)
            return None
        if user is None:  # pragma: no cover - the dummy hash matches no password
            self.throttle.failed(name)
            return None
        self.throttle.succeeded(name)
        principal = Principal(user.name, user.role, "basic")
        with self._cache_lock:
            self._verified[key] = principal
            while len(self._verified) > _CACHE_SIZE:
                self._verified.popitem(last=False)
        return principal

    def _basic(self, value: str) -> Principal:
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise NotAuthenticatedError("malformed Basic credentials") from None
        name, _, password = decoded.partition(":")
        principal = self.check_password(name, password)
        if principal is None:
            raise NotAuthenticatedError("wrong user name or password")
        return principal

    def _cookie_credentials(
        self, conn: HTTPConnection, cookies: dict[str, str]
    ) -> Principal | None:
        """The Java clients' ``COOKIE`` login (``ARCHIVE_SERVICE_AUTHMETHOD=COOKIE`` on the
        workflow: a cookie named ``ARCHIVE_SERVICE_USER`` holding its password): a cookie
        named after a user of ``ARCHIVE_USERS`` holding that user's password, or after an
        API token holding the token. Reads of the API only (GET, HEAD): a cookie gives no
        write, whoever placed it; a cookie that names nobody is ignored."""
        if not conn.url.path.startswith("/api/"):
            return None
        for name, value in cookies.items():
            if name in self.users:
                principal = self.check_password(name, value)
                if principal is not None:
                    return principal
            found = self.tokens.get(token_hash(value))
            if found is not None and found.name == name:
                return Principal(found.name, found.role, "token")
        return None

    def _bearer(self, token: str) -> Principal:
        found = self.tokens.get(token_hash(token))
        if found is not None:
            return Principal(found.name, found.role, "token")
        if self.oidc is not None:
            principal = self.oidc.verify(token)
            if principal is not None:
                return principal
        raise NotAuthenticatedError("unknown, invalid or expired token")

    # ---- login cookies ---------------------------------------------------------------

    def make_session(self, principal: Principal, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + SESSION_SECONDS)
        nonce = secrets.token_urlsafe(12)
        payload = json.dumps({"u": principal.name, "e": expires, "n": nonce}, separators=(",", ":"))
        body = base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii").rstrip("=")
        return f"{body}.{self._sign(body)}"

    def read_session(self, cookie: str, now: float | None = None) -> Principal | None:
        body, _, signature = cookie.partition(".")
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            name, expires, nonce = str(data["u"]), int(data["e"]), str(data["n"])
        except (ValueError, KeyError, TypeError):
            return None
        user = self.users.get(name)  # the role as configured now, not as it was
        if user is None or expires < (now if now is not None else time.time()):
            return None
        with self._ended_lock:
            if nonce in self._ended:
                return None
        return Principal(user.name, user.role, "session")

    def end_session(self, cookie: str) -> None:
        """Logout: the cookie stops working here even if its holder kept a copy. Kept in
        this process until the cookie would have expired anyway."""
        body = cookie.partition(".")[0]
        if self.read_session(cookie) is None:
            return
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        now = time.time()
        with self._ended_lock:
            for nonce in [n for n, until in self._ended.items() if until < now]:
                del self._ended[nonce]
            self._ended[str(data["n"])] = float(data["e"])

    def secure_cookies(self, conn: HTTPConnection) -> bool:
        """Whether a login cookie gets the Secure flag: ARCHIVE_COOKIE_SECURE, or (auto)
        when the request came over https, directly or as a trusted proxy says."""
        if self._cookie_secure != "auto":
            return self._cookie_secure == "always"
        if conn.url.scheme == "https":
            return True
        peer = conn.client.host if conn.client else ""
        if "*" in self._trusted or peer in self._trusted:
            forwarded = conn.headers.get("x-forwarded-proto", "")
            return forwarded.split(",")[0].strip().lower() == "https"
        return False

    def _sign(self, body: str) -> str:
        mac = hmac.new(self._secret, b"session\0" + body.encode("ascii"), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode("ascii").rstrip("=")

    # ---- requests from elsewhere -----------------------------------------------------

    def check_origin(self, conn: HTTPConnection, method: str) -> None:
        """Refuse cross-site writes, and (open service) any request not sent to loopback."""
        host = conn.headers.get("host", "")
        if self.open and not is_loopback(_hostname(host)):
            raise AccessDeniedError(
                "this service runs without credentials and answers only on a loopback address"
            )
        if method in SAFE_METHODS:
            return
        if conn.headers.get("sec-fetch-site", "") == "cross-site":
            raise AccessDeniedError("cross-site request refused")
        origin = conn.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc.lower() != host.lower():
            raise AccessDeniedError(f"request from another origin ({origin}) refused")
        if origin == "null":
            raise AccessDeniedError("request from an opaque origin refused")


def java_cookies(headers: list[str]) -> dict[str, str]:
    """The cookies of ``Cookie`` headers as the Java clients send them (imixs-melman's
    FORM and COOKIE logins): JAX-RS cookies with ``$Version``/``$Path`` attributes,
    several joined by commas, values maybe quoted; ``name=value; name2=value2`` too."""
    found: dict[str, str] = {}
    for header in headers:
        for part in re.split(r"[;,]", header):
            name, sep, value = part.strip().partition("=")
            name = name.strip()
            if sep and name and not name.startswith("$"):
                found.setdefault(name, value.strip().strip('"'))
    return found


def _rounds(encoded: str) -> int:
    """The PBKDF2 rounds of a configured hash (the dummy hash costs as much)."""
    parts = encoded.split("$")
    return int(parts[1]) if len(parts) == 4 and parts[1].isdigit() else 1000


def _hostname(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header
