"""A real FTPS server on loopback (pyftpdlib, explicit TLS required on control and data
connections), with a self-signed certificate made here, and a fault: drop the connection
after some bytes of a transfer (``server.drop_after = n``)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

with warnings.catch_warnings():  # on Python 3.11 pyftpdlib uses the standard asyncore/asynchat
    warnings.filterwarnings("ignore", "The async(ore|hat) module is deprecated", DeprecationWarning)
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler as FTPHandler  # (its tests use it)
    from pyftpdlib.handlers import TLS_DTPHandler, TLS_FTPHandler
    from pyftpdlib.servers import FTPServer

from support.certificates import self_signed_pem

USER, PASSWORD = "backup", "ftp-secret"


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """(key+certificate PEM for the server, certificate PEM for the client to trust)."""
    cert_pem, key_pem = self_signed_pem("localhost", ("localhost",))
    server_pem, ca_pem = folder / "server.pem", folder / "ca.pem"
    server_pem.write_bytes(key_pem + cert_pem)
    ca_pem.write_bytes(cert_pem)
    return server_pem, ca_pem


@dataclass
class Faults:
    drop_after: int | None = None
    """Bytes of one transfer (either way) after which both connections are closed."""
    drops: int = 0


class _DroppingDTP(TLS_DTPHandler):  # type: ignore[misc]
    faults: Faults

    def _moved(self, count: int) -> bool:
        """Count; True (after closing both connections) once past the limit."""
        self._moved_bytes = getattr(self, "_moved_bytes", 0) + count
        limit = self.faults.drop_after
        if limit is None or self._moved_bytes < limit:
            return False
        self.faults.drops += 1
        control = self.cmd_channel
        self.close()
        control.close()
        return True

    def send(self, data: Any) -> int:
        sent: int = super().send(data)
        if sent:
            self._moved(sent)
        return sent

    def recv(self, buffer_size: int) -> bytes:
        chunk: bytes = super().recv(buffer_size)
        if chunk and self._moved(len(chunk)):
            return b""
        return chunk


@dataclass
class FtpsServer:
    host: str
    port: int
    root: Path
    cafile: Path
    faults: Faults

    def url(self, path: str = "/backup") -> str:
        return f"ftps://{USER}@{self.host}:{self.port}{path}"

    def env(self, path: str = "/backup") -> dict[str, str]:
        """The ``BACKUP_FTP_*`` settings that back up into ``path`` of this server."""
        return {
            "BACKUP_FTP_HOST": self.host,
            "BACKUP_FTP_PORT": str(self.port),
            "BACKUP_FTP_USER": USER,
            "BACKUP_FTP_PASSWORD": PASSWORD,
            "BACKUP_FTP_PATH": path,
            "BACKUP_FTP_CAFILE": str(self.cafile),
        }


class _Server(FTPServer):
    """The address read once, when bound: serve_forever's first line logs it from the
    server's thread, and a test over before that line ran (a skip at once) had closed the
    socket: "Bad file descriptor" in the thread, an error of the test."""

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        super().__init__(address, handler)
        self._bound: tuple[str, int] = self.socket.getsockname()[:2]

    @property
    def address(self) -> tuple[str, int]:
        return self._bound


def serve(tmp: Path) -> Iterator[FtpsServer]:
    root = tmp / "ftp-root"
    (root / "backup").mkdir(parents=True)
    server_pem, ca_pem = make_certificate(tmp)
    authorizer = DummyAuthorizer()
    authorizer.add_user(USER, PASSWORD, str(root), perm="elradfmwMT")
    faults = Faults()
    dtp = type("DTP", (_DroppingDTP,), {"faults": faults})
    handler = type(
        "Handler",
        (TLS_FTPHandler,),
        {
            "certfile": str(server_pem),
            "authorizer": authorizer,
            "tls_control_required": True,
            "tls_data_required": True,
            "dtp_handler": dtp,
            "use_sendfile": False,
            "banner": "imixs-archive test FTPS",
        },
    )
    server = _Server(("127.0.0.1", 0), handler)
    server.max_cons = 32
    host, port = server.address
    stop = threading.Event()
    thread = threading.Thread(target=_serve_until, args=(server, stop), daemon=True)
    thread.start()
    try:
        yield FtpsServer(host, port, root, ca_pem, faults)
    finally:
        stop.set()
        thread.join(10)


def _serve_until(server: _Server, stop: threading.Event) -> None:
    """Polls until ``stop``, then closes the server here, in the thread that polls: closed
    from the test's thread, the loop could be between its check and its next poll and
    poll a closed epoll ("Bad file descriptor" in this thread, an error of the test)."""
    try:
        while not stop.is_set():
            server.ioloop.loop(timeout=0.05, blocking=False)
    finally:
        server.close_all()
