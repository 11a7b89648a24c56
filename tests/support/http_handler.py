"""The request handler the test servers on loopback share (the workflow double and the
canned server): HTTP/1.1 keep-alive, no Nagle delay, quiet, request bodies in both
framings."""

from __future__ import annotations

import contextlib
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any


class LoopbackHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm
        # and the client's delayed ACK add 40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()

    def read_body(self) -> bytes:
        """The request body, sent with a Content-Length or chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))
