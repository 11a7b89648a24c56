"""The FTPS test server itself (``support/ftps_server.py``)."""

from __future__ import annotations

from support.ftps_server import FTPHandler, _Server


def test_a_server_closed_before_its_thread_began_serving_stops_quietly() -> None:
    # A test skipped at once closes the server before serve_forever's first line (which
    # logs the address) ran in its thread: that line read the closed socket and raised.
    server = _Server(("127.0.0.1", 0), FTPHandler)
    server.close_all()
    server.serve_forever(timeout=0.05)
