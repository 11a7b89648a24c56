"""A small HTTP/1.1 server on loopback whose answers a test writes: for the transport's
tests (keep-alive, connections the server drops, truncated bodies, chunked bodies, TLS).

``answer(request) -> Canned`` decides each answer; the server counts connections."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from support.certificates import self_signed_pem
from support.http_handler import LoopbackHandler


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False
    """Send the body with chunked transfer encoding (in 1 KB chunks)."""
    short_by: int = 0
    """Announce ``len(body)`` but send ``short_by`` bytes less, then close."""
    close_after: bool = False
    """Close the connection after the answer without saying so (no Connection: close)."""
    delay: float = 0.0


Answer = Callable[[Seen], Canned]


class CannedServer:
    def __init__(
        self, answer: Answer, *, tls: ssl.SSLContext | None = None, read_delay: float = 0.0
    ) -> None:
        """``read_delay``: seconds to wait before reading each request's body."""
        self.answer = answer
        self.read_delay = read_delay
        self.seen: list[Seen] = []
        self.connections = 0
        self.lock = threading.Lock()
        server = self

        class Handler(_Handler):
            canned = server

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> CannedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(LoopbackHandler):
    canned: CannedServer

    def setup(self) -> None:
        super().setup()
        with self.canned.lock:
            self.canned.connections += 1
            self.number = self.canned.connections

    def _handle(self) -> None:
        if self.canned.read_delay:
            threading.Event().wait(self.canned.read_delay)
        seen = Seen(
            self.command, self.path, dict(self.headers.items()), self.read_body(), self.number
        )
        with self.canned.lock:
            self.canned.seen.append(seen)
        canned = self.canned.answer(seen)
        if canned.delay:
            threading.Event().wait(canned.delay)
        self.send_response(canned.status)
        for name, value in canned.headers.items():
            self.send_header(name, value)
        if canned.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(canned.body)))
        self.end_headers()
        if canned.chunked:
            for start in range(0, len(canned.body), 1024):
                part = canned.body[start : start + 1024]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(canned.body[: len(canned.body) - canned.short_by])
        self.wfile.flush()
        if canned.short_by or canned.close_after:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = _handle


class TunnelProxy:
    """An HTTP proxy for ``CONNECT`` only: every tunnel leads to ``127.0.0.1:port``
    whatever host it names. Records the CONNECT lines and their headers."""

    def __init__(self, port: int) -> None:
        self.connects: list[tuple[str, dict[str, str]]] = []
        proxy = self

        class Handler(LoopbackHandler):
            def do_CONNECT(self) -> None:
                proxy.connects.append((self.path, dict(self.headers.items())))
                upstream = socket.create_connection(("127.0.0.1", port))
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                _pipe(self.connection, upstream)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> TunnelProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _pipe(left: socket.socket, right: socket.socket) -> None:
    """Copy bytes both ways until one side closes."""

    def copy(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=copy, args=(right, left), daemon=True)
    other.start()
    copy(left, right)
    other.join(5)
    right.close()


@contextlib.contextmanager
def self_signed(
    folder: Path, names: tuple[str, ...] = ()
) -> Iterator[tuple[ssl.SSLContext, ssl.SSLContext]]:
    """A server TLS context with a fresh self-signed certificate for 127.0.0.1 (and the
    DNS ``names``), and a client context that trusts exactly that certificate."""
    cert_pem, key_pem = self_signed_pem("127.0.0.1", names)
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    yield server, client
