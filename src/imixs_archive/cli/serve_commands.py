"""``serve`` (the archive service: REST API and web UI) and ``hash-password``."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import signal
import socket
import sys
import threading
from dataclasses import replace
from typing import Any

from imixs_archive.cli.context import Context, store_options
from imixs_archive.config import Settings, java_warnings
from imixs_archive.errors import ConfigError
from imixs_archive.logs import setup_logging
from imixs_archive.recovery.ftps_tls import tls_warnings
from imixs_archive.runtime import open_store
from imixs_archive.storage.base import Backend
from imixs_archive.web.credentials import check_exposure, hash_password, new_token


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", parents=[store_options()], help="run the archive service: REST API and web UI"
    )
    p.add_argument("--host", help="address to listen on (env ARCHIVE_HTTP_HOST, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (env ARCHIVE_HTTP_PORT, 8080; 0: any free)")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("hash-password", help="make a password hash for ARCHIVE_USERS (or a token)")
    p.add_argument("--name", default="admin", help="user or token name (default admin)")
    p.add_argument("--role", choices=["reader", "auditor", "manager"], default="manager")
    p.add_argument(
        "--token", action="store_true", help="make a new API token for ARCHIVE_API_TOKENS"
    )
    p.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    p.set_defaults(handler=cmd_hash_password)


def bind(settings: Settings) -> socket.socket:
    """The listening socket, or a ConfigError saying why it cannot be had."""
    family = socket.AF_INET6 if ":" in settings.http_host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say TCP. Without it
    # an answer's body, written after its headers, waited for the client's delayed ACK
    # (40 ms per request on a kept-alive connection).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.http_host.strip("[]"), settings.http_port))
        sock.listen(128)
    except (OSError, OverflowError) as exc:  # OverflowError: a port beyond 65535
        sock.close()
        raise ConfigError(
            f"cannot listen on {settings.http_host}:{settings.http_port}: "
            f"{getattr(exc, 'strerror', None) or exc}"
        ) from None
    return sock


def cmd_serve(args: argparse.Namespace, ctx: Context) -> int:
    settings = replace(
        ctx.settings,
        http_host=args.host if args.host is not None else ctx.settings.http_host,
        http_port=args.port if args.port is not None else ctx.settings.http_port,
    )
    check_exposure(settings)
    sock = bind(settings)  # first: a port in use creates no archive (nor opens one)
    try:
        store = open_store(settings)
        try:
            _serve(settings, store, sock)
        finally:
            store.close()
    finally:
        sock.close()
    return 0


def _serve(settings: Settings, store: Backend, sock: socket.socket) -> None:
    import uvicorn  # the web stack is loaded by the command that uses it

    from imixs_archive.web.app import create_app
    from imixs_archive.web.connections import GuardedServer, Limits, guarded_protocol

    setup_logging(settings)
    for line in java_warnings():
        logging.getLogger("imixs_archive.config").warning("%s", line)
    for line in tls_warnings(settings) if settings.backup_ftp_host.strip() else ():
        logging.getLogger("imixs_archive.config").warning("%s", line)
    app = create_app(settings, store)
    archive = app.state.services.archive
    port = sock.getsockname()[1]
    host = f"[{settings.http_host}]" if ":" in settings.http_host else settings.http_host
    described = archive.storage.describe()
    where = described.get("path") or described.get("keyspace") or ""
    print(
        f"imixs-archive: serving http://{host}:{port}/ ({archive.storage.name} store {where}); "
        "Ctrl-C stops",
        flush=True,
    )
    config = uvicorn.Config(
        app,
        log_config=None,  # the log is ours (logs.py): uvicorn's loggers flow into it
        access_log=settings.access_log,
        proxy_headers=False,
        # SIGTERM waits this long for requests in flight (a client that stopped reading
        # would keep it waiting for ever), then cancels them.
        timeout_graceful_shutdown=int(settings.request_timeout or 60) + 1,
        # h11 with the head and body timeouts and the connection limit (web/connections.py)
        http=guarded_protocol(Limits.of(settings)),
    )
    with _TermAfterClosing(store):
        GuardedServer(config).run(sockets=[sock])


class _Terminated(Exception):
    """SIGTERM, raised again by uvicorn once it has shut down gracefully."""


class _TermAfterClosing:
    """A SIGTERM ends ``serve`` as it ends any process, but after the store is closed.

    uvicorn shuts down gracefully on SIGTERM and then raises the signal again, under the
    handler it found: by default that ends the process at once, and the store would never
    be closed (its write-ahead log never merged, ``storage/sqlite/store_file.py``). Under
    this handler the signal unwinds to here instead: the store is closed, then the process
    ends by SIGTERM all the same."""

    def __init__(self, store: Backend) -> None:
        self.store = store
        self._previous: Any = None

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._raise)

    def _raise(self, _signum: int, _frame: Any) -> None:
        raise _Terminated

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
        if kind is _Terminated:
            self.store.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)


def cmd_hash_password(args: argparse.Namespace, ctx: Context) -> int:
    if args.token:
        token, digest = new_token()
        print(f"token (give it to the client, it is shown once): {token}", file=sys.stderr)
        print(f"{args.name}:{args.role}:{digest}")
        return 0
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        if not sys.stdin.isatty():
            raise ConfigError("no terminal to ask the password on: use --password-stdin")
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise ConfigError("the passwords differ")
    if not password:
        raise ConfigError("an empty password is not allowed")
    print(f"{args.name}:{args.role}:{hash_password(password)}")
    return 0
