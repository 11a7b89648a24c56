"""The FTPS test server itself (``support/ftps_server.py``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from support.ftps_server import FTPHandler, _Server, serve


def test_a_server_closed_before_its_thread_began_serving_stops_quietly() -> None:
    # A test skipped at once closes the server before serve_forever's first line (which
    # logs the address) ran in its thread: that line read the closed socket and raised.
    server = _Server(("127.0.0.1", 0), FTPHandler)
    server.close_all()
    server.serve_forever(timeout=0.05)


def test_the_server_is_closed_by_the_thread_that_polls_it_once_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closed from the test's thread, the serving thread could be between its loop's check
    # and its next poll, and poll a closed epoll: "Bad file descriptor" in that thread, an
    # error at the teardown of test_a_dry_run_from_ftps_sends_nothing[cassandra] (skipped
    # at once) in a run on two workers.
    closed_in: list[threading.Thread] = []
    close_all = _Server.close_all

    def recording(server: _Server) -> None:
        closed_in.append(threading.current_thread())
        close_all(server)

    monkeypatch.setattr(_Server, "close_all", recording)
    running = serve(tmp_path)
    next(running)
    running.close()
    [closer] = closed_in
    assert closer is not threading.current_thread()
    assert not closer.is_alive()
