"""The ``serve`` and ``hash-password`` commands, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.credentials import parse_tokens, parse_users, verify_password
from support.snapshots import make_snapshot
from web.live import serve_process


def test_serve_refuses_an_open_non_loopback_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path)])
    assert code == 2
    assert "refusing to listen on 0.0.0.0 without credentials" in capsys.readouterr().err


def start_serve(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    """``serve --port 0`` in a process of its own, on a store in ``tmp_path``."""
    whole = {**os.environ, "ARCHIVE_DATA_DIR": str(tmp_path / "store"), **env}
    whole.pop("ARCHIVE_HTTP_HOST", None)
    return subprocess.Popen(
        [sys.executable, "-m", "imixs_archive", "serve", "--port", "0"],
        env=whole,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_prints_the_url_and_serves(tmp_path: Path) -> None:
    process = start_serve(tmp_path)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("imixs-archive: serving http://127.0.0.1:"), line
        assert "(sqlite store /" in line and "archive.db)" in line, line  # says where
        url = line.split()[2].rstrip("/")
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(f"{url}/api/stats", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert answer.status_code == 200 and answer.json()["snapshots"] == 0
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=60)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.returncode in (0, -15) and "Traceback" not in err


def test_serve_warns_at_start_about_the_weaker_ftps_choices(tmp_path: Path) -> None:
    process = start_serve(
        tmp_path,
        BACKUP_FTP_HOST="127.0.0.1",
        BACKUP_FTP_PORT="1",  # nothing there: the backup's rounds fail, serve goes on
        BACKUP_FTP_PROTECT_DATA="false",
        BACKUP_FTP_CERTIFICATE_CHECK="chain",
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("imixs-archive: serving http://")
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=60)
    assert "WARNING imixs_archive.config: BACKUP_FTP_PROTECT_DATA=false: " in err, err
    assert "WARNING imixs_archive.config: BACKUP_FTP_CERTIFICATE_CHECK=chain: " in err, err


def test_serve_says_when_the_port_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--port", str(port), "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no archive made (nor its folder) for a failed start


def test_hash_password_and_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import io

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("p@ss word\n"))
    assert main(["hash-password", "--name", "ann", "--role", "reader", "--password-stdin"]) == 0
    entry = capsys.readouterr().out.strip()
    user = parse_users(entry)["ann"]
    assert verify_password("p@ss word", user.password_hash)
    assert main(["hash-password", "--token", "--name", "ci"]) == 0
    captured = capsys.readouterr()
    token = captured.err.rsplit(" ", 1)[1].strip()
    (found,) = parse_tokens(captured.out.strip()).values()
    import hashlib

    assert found.sha256 == hashlib.sha256(token.encode()).hexdigest() and found.role == "manager"


def test_sigterm_does_not_wait_for_a_stalled_client(tmp_path: Path) -> None:
    """A client that stops reading a large download must not keep SIGTERM waiting."""
    import random
    import signal
    import socket

    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.storage.sqlite.backend import SQLiteBackend
    from support.snapshots import make_snapshot

    doc = make_snapshot(0, files={"big.bin": random.Random(3).randbytes(40_000_000)})
    with SQLiteBackend(tmp_path / "store") as backend:
        Archive(backend).store(doc)
    env = {"ARCHIVE_DATA_DIR": str(tmp_path / "store"), "ARCHIVE_REQUEST_TIMEOUT": "2"}
    process, url = serve_process(env)
    try:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as stalled:
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            path = f"/api/archive/snapshot/{doc['$uniqueid'][0]}/file/big.bin"
            stalled.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            assert stalled.recv(100).startswith(b"HTTP/1.1 200")  # then reads no more
            time.sleep(0.5)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)
            # its graceful shutdown is cut after 3 s (ARCHIVE_REQUEST_TIMEOUT + 1); the rest
            # is the process's own stop, which a busy machine may slow (it was < 10 s):
            # waiting for the client, or the default 61 s, would still fail
            assert time.monotonic() - started < 30
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_serve_ended_by_sigterm_leaves_nothing_only_in_the_log(tmp_path: Path) -> None:
    """uvicorn raises SIGTERM again once it has shut down: the store is closed first (its
    write-ahead log merged into archive.db), then the process ends by the signal."""
    store = tmp_path / "store"
    process, url = serve_process({"ARCHIVE_DATA_DIR": str(store)})
    try:
        pushed = httpx.post(
            f"{url}/api/archive/snapshot",
            content=to_xml(make_snapshot(1)),
            headers={"Content-Type": "application/xml"},
            timeout=10,
        )
        assert pushed.status_code == 201, pushed.text
        assert (store / "archive.db-wal").stat().st_size > 0  # the push's commits: in the log
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM and "Traceback" not in err
    wal = store / "archive.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert not (store / "archive.db-unmerged").exists()
    wal.unlink(missing_ok=True)  # harmless now
    with SQLiteBackend(store) as backend:
        assert Archive(backend).exists(str(make_snapshot(1).get_first("$uniqueid")))
        assert backend.findings() == []


@pytest.mark.parametrize("access_log", ["true", "false"])
def test_the_log_as_json_lines_with_an_access_line_per_request(
    tmp_path: Path, access_log: str
) -> None:
    env = {
        "ARCHIVE_DATA_DIR": str(tmp_path / "store"),
        "ARCHIVE_LOG_FORMAT": "json",
        "ARCHIVE_ACCESS_LOG": access_log,
        "ARCHIVE_LOG_LEVELS": "uvicorn.error=WARNING",
    }
    process, url = serve_process(env)
    try:
        assert httpx.get(f"{url}/api/stats", timeout=10).status_code == 200
        assert httpx.get(f"{url}/no-such-page", timeout=10).status_code == 404
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    if access_log == "true":
        seen = {(r["method"], r["path"], r["status"]) for r in access}
        assert {("GET", "/api/stats", 200), ("GET", "/no-such-page", 404)} <= seen
    else:
        assert access == []
    assert not [r for r in records if r["logger"] == "uvicorn.error" and r["level"] == "INFO"]


def test_connections_to_serve_send_at_once() -> None:
    """TCP_NODELAY on every accepted connection: an answer's body goes after its headers
    in a second write, which Nagle's rule held back until the client's delayed ACK (40 ms
    per request on a kept-alive connection). asyncio sets it where the socket says TCP."""
    import asyncio
    import dataclasses
    import socket

    from imixs_archive.cli.serve_commands import bind
    from imixs_archive.config import load_settings

    sock = bind(dataclasses.replace(load_settings({}), http_host="127.0.0.1", http_port=0))
    seen: list[int] = []

    class Record(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            seen.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        server = await asyncio.get_running_loop().create_server(Record, sock=sock)
        async with server:
            port = sock.getsockname()[1]
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            while not seen:
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(asyncio.wait_for(accept_one(), 30))
    assert seen == [1]
