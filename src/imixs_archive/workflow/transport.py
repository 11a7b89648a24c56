"""HTTP/1.1 for the workflow client: urllib3's connection pools, shared between the sync
workers' threads.

urllib3 does the plumbing: a pool of kept-alive connections per origin (closed ones are
noticed before reuse), separate connect and read timeouts, chunked request bodies,
response bodies read block by block, forwarding through an HTTP proxy and ``CONNECT``
tunnels for https. This module adds what the client needs on top: the proxy variables of
the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, as curl reads them;
urllib3 reads none), one resend when a kept-alive connection dies under a request that may
be sent twice, the read timeout also for sending (urllib3 sends under the connect
timeout), and one error type for every transport failure. Why not httpx here (it is used
elsewhere in the project): it costs several times the CPU per request
(``bench/sync_costs.py``, figures in ``bench/README.md``).
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, cast
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    IncompleteRead,
    ProtocolError,
    ProxyError,
    SSLError,
)
from urllib3.util import make_headers

from imixs_archive.workflow.errors import WorkflowUnavailableError

BLOCK = 128 * 1024
"""Bytes per block of a streamed response body."""

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods sent again once when a kept-alive connection turns out dead (RFC 9110)."""

Body = bytes | Iterable[bytes] | None
Headers = urllib3.HTTPHeaderDict
_Opener = HTTPConnectionPool | urllib3.PoolManager
_Route = tuple[_Opener, bool]
"""A pool and whether requests name the whole URL (through a proxy)."""
_FAILURES = (HTTPError, OSError, http.client.HTTPException)
_DROPPED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
"""What a kept-alive connection the server closed looks like to the next request."""


@dataclass
class Reply:
    """A whole answer (small ones: event lists, lock results, logins)."""

    method: str
    url: str
    status: int
    headers: Headers
    body: bytes

    @property
    def content_type(self) -> str:
        return str(self.headers.get("Content-Type", ""))

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Transport(Protocol):
    """What the workflow client needs from HTTP (tests may give their own)."""

    def request(
        self, method: str, url: str, headers: dict[str, str], body: Body, *, resend: bool = False
    ) -> Reply: ...

    def open(self, method: str, url: str, headers: dict[str, str]) -> Response: ...

    def close(self) -> None: ...


class Response:
    """An answer whose body is read as a stream; :meth:`close` it (or use ``with``)."""

    def __init__(self, what: str, raw: urllib3.BaseHTTPResponse) -> None:
        self.what = what
        """The request, for error messages (``GET http://...``)."""
        self._raw = raw
        self.status = raw.status
        self.headers: Headers = raw.headers

    @property
    def content_type(self) -> str:
        return str(self.headers.get("Content-Type", ""))

    def iter_blocks(self, size: int = BLOCK) -> Iterator[bytes]:
        """The body, block by block; a connection lost mid-body raises
        ``WorkflowUnavailableError`` (also when fewer bytes came than announced)."""
        raw = self._raw
        try:
            while block := raw.read(size):
                yield block
        except _FAILURES as exc:
            raise unavailable(self.what, exc) from exc

    def read(self) -> bytes:
        return b"".join(self.iter_blocks())

    def close(self) -> None:
        """Give the connection back when the body was read to its end, else close it
        (reading the rest of a 500 MB answer nobody wants costs more than a new one)."""
        raw = self._raw
        if not raw.closed:
            raw.close()  # closes the connection too: the pool opens a new one
        raw.release_conn()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ConnectionPool:
    """Kept-alive connections per origin (scheme, host, port), shared by threads.

    No cap on connections in use (the sync's workers bound them); at most
    ``max_idle`` idle ones are kept per origin."""

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_idle: int = 16,
        tls: ssl.SSLContext | None = None,
        proxies: dict[str, str] | None = None,
    ) -> None:
        """``proxies``: scheme -> proxy URL, and ``no`` -> hosts to reach directly; by
        default the environment's (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``)."""
        self._proxies = getproxies() if proxies is None else proxies
        self._options: dict[str, Any] = {
            "timeout": urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            "maxsize": max_idle,
            "block": False,
            "ssl_context": tls,
        }
        self._last = threading.local()
        self._classes = _pool_classes(read_timeout, self._last)
        self._routes: dict[tuple[str, str, int], _Route] = {}
        self._lock = threading.Lock()

    def request(
        self, method: str, url: str, headers: dict[str, str], body: Body, *, resend: bool = False
    ) -> Reply:
        """Send one request and read the whole answer (``resend``: see :meth:`open`)."""
        raw = self._send(method, url, headers, body, resend=resend, whole=True)
        return Reply(method, url, raw.status, raw.headers, raw.data)

    def open(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: Body = None,
        *,
        resend: bool = False,
    ) -> Response:
        """Send one request; the answer's status and headers, its body still to read.

        A kept-alive connection can be closed by the server just as a request goes out
        on it; the request is then sent once more on a new connection if its method is
        idempotent or the caller says it may be sent twice (``resend``)."""
        raw = self._send(method, url, headers, body, resend=resend, whole=False)
        return Response(f"{method} {url}", raw)

    def __enter__(self) -> ConnectionPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the idle connections (a later request opens new ones)."""
        with self._lock:
            routes, self._routes = self._routes, {}
        for opener, _absolute in routes.values():
            if isinstance(opener, urllib3.PoolManager):
                opener.clear()
            else:
                opener.close()

    # ---- plumbing -----------------------------------------------------------------------

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: Body,
        *,
        resend: bool,
        whole: bool,
    ) -> urllib3.BaseHTTPResponse:
        what = f"{method} {url}"
        opener, target = self._route(url)
        replayable = (method in IDEMPOTENT or resend) and (body is None or isinstance(body, bytes))
        while True:
            self._last.reused = False
            try:
                return opener.urlopen(
                    method,
                    target,
                    body=body,
                    headers=headers,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=whole,
                    release_conn=whole,
                )
            except ProtocolError as exc:
                if self._last.reused and replayable and isinstance(_cause(exc), _DROPPED):
                    continue  # the server closed it while idle: once more on a new one
                raise unavailable(what, exc) from exc
            except (ConnectTimeoutError, SSLError, ProxyError) as exc:
                raise unavailable(what, exc, down=True) from exc
            except _FAILURES as exc:
                raise unavailable(what, exc) from exc

    def _route(self, url: str) -> tuple[_Opener, str]:
        """The pool of the URL's origin and the request target in it; or, through a
        proxy, urllib3's proxy manager and the whole URL."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise WorkflowUnavailableError(f"not an http(s) URL: {url!r}", down=True)
        origin = (scheme, parts.hostname, parts.port or (443 if scheme == "https" else 80))
        route = self._routes.get(origin)
        if route is None:
            with self._lock:
                route = self._routes.get(origin) or self._new_route(origin)
                self._routes[origin] = route
        opener, absolute = route
        if absolute:
            return opener, url.split("#", 1)[0]
        return opener, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def _new_route(self, origin: tuple[str, str, int]) -> _Route:
        scheme, host, port = origin
        proxy = _proxy(self._proxies.get(scheme, ""), host, self._proxies.get("no", ""))
        options = dict(self._options)
        if proxy is not None:
            manager = urllib3.ProxyManager(proxy[0], proxy_headers=proxy[1])
            manager.connection_pool_kw.update(options)
            manager.pool_classes_by_scheme = self._classes
            return manager, True
        if scheme == "http":
            del options["ssl_context"]
        return self._classes[scheme](host, port, **options), False


class _Connection:
    """Sends under the read timeout once connected (urllib3 sends under the connect
    timeout: a 10 s pause of a workflow reading a large restore would end it), and notes
    per thread whether its last request went out on a kept-alive connection."""

    send_timeout: float | None = None
    last: threading.local
    _used: object = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        conn = cast(HTTPConnection, self)
        self.last.reused = conn.sock is not None and conn.sock is self._used
        if conn.sock is None:
            conn.connect()  # under the connect timeout (urllib3 set it just before)
        self._used = conn.sock
        conn.timeout = self.send_timeout
        super().request(*args, **kwargs)  # type: ignore[misc]


def _pool_classes(
    send_timeout: float, last: threading.local
) -> dict[str, type[HTTPConnectionPool]]:
    """urllib3's pools, their connections sending under ``send_timeout`` and noting in
    ``last.reused`` whether a request went out on a kept-alive connection."""

    class Plain(_Connection, HTTPConnection):
        pass

    class Tls(_Connection, HTTPSConnection):
        pass

    Plain.send_timeout = Tls.send_timeout = send_timeout
    Plain.last = Tls.last = last

    class PlainPool(HTTPConnectionPool):
        ConnectionCls = Plain

    class TlsPool(HTTPSConnectionPool):
        ConnectionCls = Tls

    return {"http": PlainPool, "https": TlsPool}


def _proxy(url: str, host: str, no_proxy: str) -> tuple[str, dict[str, str]] | None:
    """The proxy's URL and headers for a host, if any (port 8080 when the URL has none)."""
    if not url or _bypassed(host, no_proxy):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return None
    headers: dict[str, str] = {}
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        token = make_headers(proxy_basic_auth=pair)["proxy-authorization"]
        headers["Proxy-Authorization"] = token
    scheme = parts.scheme if parts.scheme in ("http", "https") else "http"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{scheme}://{host}:{parts.port or 8080}", headers


def _bypassed(host: str, no_proxy: str) -> bool:
    """``NO_PROXY`` rules: ``*``, host names and domain suffixes (``.example.org`` or
    ``example.org``), with or without a port. Loopback is always reached directly."""
    host = host.lower().strip("[]")
    if host in ("localhost", "::1") or host.startswith("127."):
        return True
    for entry in no_proxy.replace(";", ",").split(","):
        name = entry.strip().lower().lstrip(".")
        name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
        if name == "*" or (name and (host == name or host.endswith("." + name))):
            return True
    return False


def _cause(exc: BaseException) -> BaseException:
    """The socket-level error inside urllib3's wrappers (``ProtocolError('Connection
    aborted.', RemoteDisconnected(...))``, ``NewConnectionError`` from an ``OSError``)."""
    if isinstance(exc, ProtocolError) and len(exc.args) > 1:
        inner = exc.args[1]
        if isinstance(inner, BaseException):
            return inner
    if isinstance(exc, ProxyError):
        return _cause(exc.original_error)
    if isinstance(exc, ConnectTimeoutError) and exc.__cause__ is not None:
        return _cause(exc.__cause__)
    return exc


def unavailable(what: str, exc: BaseException, *, down: bool = False) -> WorkflowUnavailableError:
    """The project's error for a transport failure (``down``: no connection at all)."""
    cause = _cause(exc)
    if isinstance(cause, IncompleteRead | http.client.IncompleteRead):
        missing = cause.expected
        return WorkflowUnavailableError(
            f"{what}: connection closed {missing} bytes before the body's end", down=down
        )
    timeout = isinstance(cause, TimeoutError | urllib3.exceptions.TimeoutError)
    name = "Timeout" if timeout else type(cause).__name__
    detail = str(cause) or type(cause).__name__
    return WorkflowUnavailableError(f"{what}: {name}: {detail}", down=down)
