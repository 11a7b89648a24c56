"""HTTP/1.1 for the workflow client: the standard library's ``http.client`` connections,
kept alive and shared between the sync workers' threads.

Why not httpx here (it is used elsewhere in the project): the sync makes three requests
per snapshot, and on the reference VM httpx spends 1.5 ms of CPU on each (URL model,
cookie jar, auth flow, the httpcore layer), ``http.client`` 0.34 ms
(``bench/sync_costs.py``). For small snapshots that is the difference between ~90 and
~170 snapshots per second. Why not urllib3 (issue 19, tried: it does all of the below):
built on the same ``http.client``, it adds ~0.4 ms of CPU a request even with a pool per
origin kept by hand, and the sync of small snapshots ran 20-28 % slower with it in the
same run (``bench/README.md``, "urllib3 instead of http.client"), past the 10 % allowed.

What this module adds to ``http.client`` is only what the client needs: a pool of idle
connections per origin, separate connect and read timeouts, a check that an idle
connection was not closed by the server before it is reused, bodies streamed in both
directions, the proxy variables (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, as httpx
and curl read them), and one error type for every transport failure.
"""

from __future__ import annotations

import base64
import functools
import http.client
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email.message import Message
from typing import Protocol
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies

from imixs_archive.workflow.errors import WorkflowUnavailableError

BLOCK = 128 * 1024
"""Bytes per block of a streamed response body."""

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods sent again once when a kept-alive connection turns out dead (RFC 9110)."""

Body = bytes | Iterable[bytes] | None
Origin = tuple[str, str, int]
_Connection = http.client.HTTPConnection


@dataclass
class Reply:
    """A whole answer (small ones: event lists, lock results, logins)."""

    method: str
    url: str
    status: int
    headers: Message
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

    def __init__(
        self,
        what: str,
        conn: _Connection,
        raw: http.client.HTTPResponse,
        release: Callable[[_Connection], None],
    ) -> None:
        self.what = what
        """The request, for error messages (``GET http://...``)."""
        self._conn: _Connection | None = conn
        self._raw = raw
        self._release = release
        self.status = raw.status
        self.headers: Message = raw.headers

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
        except (OSError, http.client.HTTPException) as exc:
            raise unavailable(self.what, exc) from exc
        if raw.length:  # the server closed the connection before the announced length
            raise WorkflowUnavailableError(
                f"{self.what}: connection closed {raw.length} bytes before the body's end"
            )

    def read(self) -> bytes:
        return b"".join(self.iter_blocks())

    def close(self) -> None:
        """Give the connection back when the body was read to its end, else close it
        (reading the rest of a 500 MB answer nobody wants costs more than a new one)."""
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        if self._raw.isclosed() and not self._raw.will_close:
            self._release(conn)
        else:
            conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ReadTimeout:
    """``connect_timeout`` (the connection's ``timeout``) while connecting and during a
    TLS handshake, ``read_timeout`` for every read and write after."""

    read_timeout: float | None = None
    absolute = False
    """Requests name the whole URL (plain http through a proxy)."""
    proxy_headers: dict[str, str] | None = None
    sock: socket.socket

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.sock.settimeout(self.read_timeout)


class _Plain(_ReadTimeout, http.client.HTTPConnection):
    pass


class _Tls(_ReadTimeout, http.client.HTTPSConnection):
    pass


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
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle = max_idle
        self._tls = tls
        self._proxies = getproxies() if proxies is None else proxies
        self._idle: dict[Origin, list[_Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self, method: str, url: str, headers: dict[str, str], body: Body, *, resend: bool = False
    ) -> Reply:
        """Send one request and read the whole answer (``resend``: see :meth:`open`)."""
        with self.open(method, url, headers, body, resend=resend) as response:
            content = response.read()
        return Reply(method, url, response.status, response.headers, content)

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
        key, target = _split(url)
        what = f"{method} {url}"
        url = url.split("#", 1)[0]
        replayable = (method in IDEMPOTENT or resend) and (body is None or isinstance(body, bytes))
        while True:
            conn, reused = self._acquire(key)
            try:
                raw = self._exchange(conn, method, url, target, headers, body)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                if reused and replayable:
                    continue  # the server closed it while idle: once more on a new one
                raise unavailable(what, exc) from exc
            except _ConnectFailed as failed:
                conn.close()
                raise unavailable(what, failed.cause, down=True) from failed.cause
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise unavailable(what, exc) from exc
            except BaseException:
                # The body failed part-way (a stored piece that does not check out): the
                # request is cut off, never finished, and the connection not used again.
                conn.close()
                raise
            return Response(what, conn, raw, functools.partial(self._release, key))

    def __enter__(self) -> ConnectionPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()

    # ---- plumbing -----------------------------------------------------------------------

    def _exchange(
        self,
        conn: _Connection,
        method: str,
        url: str,
        target: str,
        headers: dict[str, str],
        body: Body,
    ) -> http.client.HTTPResponse:
        if isinstance(conn, _ReadTimeout) and conn.absolute:  # plain http through a proxy
            target = url
            headers = {**(conn.proxy_headers or {}), **headers}
        if conn.sock is None:
            try:
                conn.connect()
            except OSError as exc:
                raise _ConnectFailed(exc) from exc
        # A body of blocks goes out with chunked transfer encoding (http.client decides).
        conn.request(method, target, body=body, headers=headers)
        return conn.getresponse()

    def _acquire(self, key: Origin) -> tuple[_Connection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            while idle:
                conn = idle.pop()
                if _still_open(conn):
                    return conn, True
                conn.close()
        return self._connection(key), False

    def _release(self, key: Origin, conn: _Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if not self._closed and len(idle) < self.max_idle:
                idle.append(conn)
                return
        conn.close()

    def _connection(self, key: Origin) -> _Connection:
        scheme, host, port = key
        proxy = self._proxy(scheme, host)
        conn: _Plain | _Tls
        if scheme == "https":
            context = self._tls or ssl.create_default_context()
            if proxy is None:
                conn = _Tls(host, port, timeout=self.connect_timeout, context=context)
            else:  # a CONNECT tunnel through the proxy, TLS with the host inside it
                conn = _Tls(*proxy[:2], timeout=self.connect_timeout, context=context)
                conn.set_tunnel(host, port, headers=proxy[2])
        elif proxy is None:
            conn = _Plain(host, port, timeout=self.connect_timeout)
        else:
            conn = _Plain(*proxy[:2], timeout=self.connect_timeout)
            conn.absolute, conn.proxy_headers = True, proxy[2]
        conn.read_timeout = self.read_timeout
        return conn

    def _proxy(self, scheme: str, host: str) -> tuple[str, int, dict[str, str]] | None:
        """Host, port and headers of the proxy for this scheme and host, if any."""
        url = self._proxies.get(scheme)
        if not url or _bypassed(host, self._proxies.get("no", "")):
            return None
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if not parts.hostname:
            return None
        headers: dict[str, str] = {}
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            token = base64.b64encode(pair.encode()).decode("ascii")
            headers["Proxy-Authorization"] = f"Basic {token}"
        return parts.hostname, parts.port or 8080, headers


class _ConnectFailed(Exception):
    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _split(url: str) -> tuple[Origin, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise WorkflowUnavailableError(f"not an http(s) URL: {url!r}", down=True)
    port = parts.port or (443 if scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return (scheme, parts.hostname, port), target


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


def _still_open(conn: _Connection) -> bool:
    """An idle connection with something to read was closed (or spoken to) by the server."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def unavailable(what: str, exc: BaseException, *, down: bool = False) -> WorkflowUnavailableError:
    """The project's error for a transport failure (``down``: no connection at all)."""
    name = "Timeout" if isinstance(exc, socket.timeout | TimeoutError) else type(exc).__name__
    detail = str(exc) or type(exc).__name__
    return WorkflowUnavailableError(f"{what}: {name}: {detail}", down=down)
