"""A real server on loopback for the web tests: uvicorn in a thread on an ephemeral port,
over an embedded store holding the bundled samples and a few snapshots of our own.

``LiveServer.client`` calls the application in process (ASGI, on the server's own event
loop, so the app runs exactly as it does under uvicorn, only without the socket and the
HTTP parsing); ``LiveServer.socket_client`` goes through the real socket, for what only a
socket shows (limits, timeouts, streaming, disconnects, the serve command, the browser)."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.document.model import Document
from imixs_archive.services.importer import import_sources
from imixs_archive.services.sources import find_sources
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from imixs_archive.web.auth import TokenVerifier
from imixs_archive.web.connections import Limits, guarded_protocol
from imixs_archive.web.credentials import hash_password, token_hash
from support.snapshots import make_snapshot

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo_month.py"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PASSWORDS = {"mia": "mia-secret", "rex": "rex-secret"}
TOKENS = {"manager": "tok-manager-0123456789", "reader": "tok-reader-0123456789"}
BIG_ORIGIN = "b16f11e5-0000-4000-8000-000000000001"
BIG = bytes(range(256)) * 12_000 + b"tail"  # ~3 MiB, several pieces
ANALYTICS_CALLS = (
    "/api/stats",
    "/api/stats/dashboard?refresh=true",
    "/api/analytics/aggregates?from={month_ago}&by=group",
    "/api/analytics/leadtimes",
    "/api/analytics/export?items=$workflowgroup,$taskid:int&format=csv",
    "/api/analytics/eventlog",
    "/ui/monitor",
    "/ui/stats?refresh=true",
)
"""What the Monitor and Statistics pages show, and the analytics endpoints they link
(``analytics_calls`` fills in the range)."""


def credentials_env() -> dict[str, str]:
    # Few PBKDF2 rounds: the tests check the scheme, not its cost.
    users = ";".join(
        f"{name}:{role}:{hash_password(PASSWORDS[name], iterations=1000)}"
        for name, role in (("mia", "manager"), ("rex", "reader"))
    )
    tokens = ";".join(f"t-{role}:{role}:{token_hash(token)}" for role, token in TOKENS.items())
    return {"ARCHIVE_USERS": users, "ARCHIVE_API_TOKENS": tokens}


class _Server(uvicorn.Server):
    """uvicorn's server, keeping the event loop it serves on (the in-process client's)."""

    loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)


class InProcess(httpx.BaseTransport):
    """Hands each request to the ASGI app on ``loop`` (the live server's) and waits for the
    whole answer, headers as the app sent them. An error in the app is a 500, as a server
    answers it."""

    def __init__(self, app: FastAPI, loop: asyncio.AbstractEventLoop) -> None:
        self.asgi = httpx.ASGITransport(app, raise_app_exceptions=False)
        self.loop = loop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        again = httpx.Request(
            request.method,
            request.url,
            headers=request.headers,
            content=request.read(),
            extensions=request.extensions,
        )

        async def call() -> tuple[int, httpx.Headers, bytes]:
            answer = await self.asgi.handle_async_request(again)
            return answer.status_code, answer.headers, await answer.aread()

        timeout = request.extensions.get("timeout", {}).get("read")
        status, headers, body = asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout)
        stream = httpx.ByteStream(body)  # not content=: that would add a Content-Length
        return httpx.Response(status, headers=headers, stream=stream, request=request)


@dataclass
class LiveServer:
    url: str
    settings: Settings
    app: FastAPI
    archive: Archive
    server: _Server
    thread: threading.Thread
    sock: socket.socket

    def client(self, who: str | None = None, **kwargs: Any) -> httpx.Client:
        """A client calling the app in process, as ``who``: ``manager``/``reader`` (Basic),
        ``token-manager``/``token-reader``, or anonymous."""
        assert self.server.loop is not None
        transport = InProcess(self.app, self.server.loop)
        return self.socket_client(who, transport=transport, **kwargs)

    def socket_client(self, who: str | None = None, **kwargs: Any) -> httpx.Client:
        """A client over the real socket, as ``who`` (see ``client``)."""
        auth: Any = kwargs.pop("auth", None)
        headers = dict(kwargs.pop("headers", {}))
        if who == "manager":
            auth = ("mia", PASSWORDS["mia"])
        elif who == "reader":
            auth = ("rex", PASSWORDS["rex"])
        elif who is not None and who.startswith("token-"):
            headers["Authorization"] = f"Bearer {TOKENS[who.removeprefix('token-')]}"
        return httpx.Client(base_url=self.url, auth=auth, headers=headers, timeout=30, **kwargs)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def start_server(app: FastAPI, settings: Settings, archive: Archive) -> LiveServer:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # as serve
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        http=guarded_protocol(Limits.of(settings)),  # as serve
    )
    server = _Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return LiveServer(url, settings, app, archive, server, thread, sock)
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError("the test server did not start")


def seed(archive: Archive) -> None:
    summary = import_sources(archive, find_sources([str(SAMPLES)]))
    assert summary.failed == 0
    for step in range(3):
        archive.store(
            make_snapshot(
                step, origin=BIG_ORIGIN, files={"big.bin": BIG, "note.txt": b"n%d" % step}
            )
        )


def analytics_calls() -> list[str]:
    month_ago = dt.date.today() - dt.timedelta(days=30)
    return [path.format(month_ago=month_ago) for path in ANALYTICS_CALLS]


def seed_recent(archive: Archive, count: int = 12) -> None:
    """Snapshots of three instances over the last four days: the days within the grace
    period are counted again on every analytics call."""
    now = dt.datetime.now(dt.UTC)
    for step in range(count):
        when = now - dt.timedelta(days=step % 4, minutes=step)
        origin = f"2c0ffee0-0000-4000-8000-00000000000{step % 3}"
        archive.store(make_snapshot(step, origin=origin, modified=when))


def serve_store(
    tmp: Path, env: dict[str, str], oidc: TokenVerifier | None = None
) -> Iterator[LiveServer]:
    backend = SQLiteBackend(tmp / "store")
    settings = load_settings(
        {
            "ARCHIVE_MAX_UPLOAD_MB": "1",
            "ARCHIVE_BACKUP_DIR": str(tmp / "backups"),
            "ARCHIVE_DATA_DIR": str(tmp / "store"),  # the ledger's key beside the store
            **env,
        }
    )
    yield from serve_filled(backend, settings, seed, oidc)


def serve_beside(workflow: str, tmp: Path, **env: str) -> Iterator[LiveServer]:
    """:func:`serve_store` with the test credentials, beside the ``workflow`` (its URL)."""
    yield from serve_store(tmp, {**credentials_env(), "WORKFLOW_SERVICE_ENDPOINT": workflow, **env})


def serve_demo_month(tmp: Path, env: dict[str, str]) -> Iterator[LiveServer]:
    """:func:`serve_store` with the demo month (``scripts/demo_month.py``) imported."""
    demo = tmp / "demo.xml"
    demo.write_bytes(subprocess.run([sys.executable, str(DEMO)], capture_output=True).stdout)
    for live in serve_store(tmp, env):
        assert import_sources(live.archive, find_sources([str(demo)])).failed == 0
        yield live


def serve_filled(
    backend: Backend,
    settings: Settings,
    fill: Callable[[Archive], None],
    oidc: TokenVerifier | None = None,
) -> Iterator[LiveServer]:
    """The app on ``backend``, its archive filled by ``fill``, served until the generator
    is closed; then the store is closed."""
    app = create_app(settings, backend, oidc=oidc)
    archive: Archive = app.state.services.archive
    fill(archive)
    live = start_server(app, settings, archive)
    try:
        yield live
    finally:
        live.stop()
        backend.close()


def serve_documents(tmp: Path, docs: Iterable[Document], **env: str) -> Iterator[LiveServer]:
    """A store in ``tmp`` with ``docs`` in it, served with the test credentials and ``env``."""
    settings = load_settings(
        {
            "ARCHIVE_BACKUP_DIR": str(tmp / "backups"),
            "ARCHIVE_DATA_DIR": str(tmp / "data"),
            **credentials_env(),
            **env,
        }
    )

    def fill(archive: Archive) -> None:
        for doc in docs:
            archive.store(doc)

    yield from serve_filled(SQLiteBackend(tmp / "store"), settings, fill)


def serve_process(
    env: dict[str, str], *, open_files: int | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``serve`` on a free port in a process of its own, and its URL once it answers;
    ``open_files``: its limit of open files (RLIMIT_NOFILE, soft and hard)."""
    env = {**os.environ, **env}
    env.pop("ARCHIVE_HTTP_HOST", None)
    command = [sys.executable, "-m", "imixs_archive", "serve", "--port", "0"]
    if open_files is not None:  # the shell sets the limit, then becomes serve (same pid)
        command = ["/bin/sh", "-c", f'ulimit -n {int(open_files)} && exec "$@"', "sh", *command]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    url = process.stdout.readline().split()[2].rstrip("/")
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/healthz", timeout=2)
            return process, url
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
