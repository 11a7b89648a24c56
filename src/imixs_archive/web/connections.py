"""What ``serve`` does about connections that hold it without asking anything (issue 48).

uvicorn times out an idle kept-alive connection (5 s), but not one that is opened and
never sends its request's head, nor a head or body that stops half-way: a thousand such
sockets held every descriptor the process had. Its HTTP protocol here (h11's, subclassed)
adds:

- a request's head must arrive within ``ARCHIVE_HTTP_HEADER_TIMEOUT`` of the connection,
  or of the request's first byte on a kept-alive one; else the connection is closed, with
  a 408 answer when part of a head came;
- a body that pauses for ``ARCHIVE_HTTP_BODY_TIMEOUT`` while the server waits for it
  (reading not paused by the server itself) closes the connection: the request's work
  stops as for a client that went away;
- at most ``ARCHIVE_HTTP_MAX_CONNECTIONS`` open connections (half of the open-file limit
  by default): one more closes the connection that has waited longest for a head, or,
  when none waits, is answered 503 and closed, so the other half of the descriptors stays
  for the store, the log and the health checks.

When ``accept()`` fails for want of descriptors anyway (something else took them),
asyncio logs a traceback per attempt, up to thousands a second; here that is one line a
minute with the count (``AcceptFailures``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from imixs_archive.config import Settings
from imixs_archive.web.descriptors import connection_limit, descriptors_in_use

log = logging.getLogger("imixs_archive.web.connections")

REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 38\r\n\r\n"
    b"too many open connections: try again\r\n"
)
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 35\r\n\r\n"
    b"the request did not arrive in time\r\n"
)
LOG_EVERY = 60.0
"""Seconds between two log lines about refused connections or failing accepts."""


@dataclass(frozen=True)
class Limits:
    header_timeout: float  # 0: none
    body_timeout: float  # 0: none
    max_connections: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            header_timeout=settings.http_header_timeout,
            body_timeout=settings.http_body_timeout,
            max_connections=connection_limit(settings.http_max_connections),
        )


class EveryMinute:
    """A warning at most every ``LOG_EVERY`` seconds, saying how often it happened."""

    def __init__(self, what: Callable[[int], str]) -> None:
        self.what = what
        self._count = 0
        self._last = -LOG_EVERY

    def happened(self) -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._last >= LOG_EVERY:
            log.warning("%s", self.what(self._count))
            self._count, self._last = 0, now


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with the head and body timeouts and the connection limit.
    Made per server by :func:`guarded_protocol` (which sets the class attributes)."""

    limits: ClassVar[Limits]
    idle: ClassVar[dict[GuardedH11, None]]
    """Connections waiting for a request's head (new, kept alive between requests, or
    with half a head), longest waiting first: the first to close to make room."""
    refused: ClassVar[EveryMinute]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._awaiting = ""  # "head" or "body" while its timer runs
        self._heard = False  # part of a head came

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._evict_one():
            self.refused.happened()
            self._close(REFUSED)
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            self._stop_waiting()
        elif self.conn.their_state is h11.IDLE:  # part of a head (a whole one starts a request)
            self._heard = True
            if self._awaiting != "head":
                self._await_head()  # from the request's first byte
        elif self.conn.their_state is h11.SEND_BODY:
            self._await_body()  # again from each byte
        else:
            self._stop_waiting()  # the request is in: the app's time budget applies

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._stop_waiting()
        self._heard = False
        super().on_response_complete()  # may start a request sent meanwhile
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.idle[self] = None  # uvicorn's keep-alive timeout applies

    def _await_head(self) -> None:
        self._stop_waiting()
        self.idle[self] = None
        if self.limits.header_timeout > 0:
            self._awaiting = "head"
            self._timer = self.loop.call_later(self.limits.header_timeout, self._head_late)

    def _await_body(self) -> None:
        self._stop_waiting()
        if self.limits.body_timeout > 0:
            self._awaiting = "body"
            self._timer = self.loop.call_later(self.limits.body_timeout, self._body_late)

    def _stop_waiting(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._awaiting = ""
        self.idle.pop(self, None)

    def _head_late(self) -> None:
        self._close(TIMED_OUT if self._heard else b"")

    def _body_late(self) -> None:
        self._timer = None
        if self.conn.their_state is not h11.SEND_BODY:
            self._awaiting = ""
            return
        if self.flow.read_paused:  # the server holds the body back, not the client
            self._await_body()
            return
        answered = self.cycle is not None and self.cycle.response_started
        self._close(b"" if answered else TIMED_OUT)

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for a head, to make room (one
        that sent part of a head is told so; one that sent nothing may try again)."""
        for oldest in self.idle:
            if oldest is not self:
                self.refused.happened()
                oldest._close(REFUSED if oldest._heard else b"")
                return True
        return False

    def _close(self, answer: bytes) -> None:
        self._stop_waiting()
        if not self.transport.is_closing():
            if answer:
                self.transport.write(answer)
            self.transport.close()


def guarded_protocol(limits: Limits) -> type[GuardedH11]:
    """The protocol class for one server (``uvicorn.Config(http=...)``)."""

    def refused(count: int) -> str:
        return (
            f"{count} connection(s) refused or closed to make room: {limits.max_connections} "
            "are open (ARCHIVE_HTTP_MAX_CONNECTIONS)"
        )

    attributes = {"limits": limits, "idle": {}, "refused": EveryMinute(refused)}
    return type("ServeH11", (GuardedH11,), attributes)


ACCEPT_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class AcceptFailures:
    """A loop exception handler: an ``accept()`` that failed for want of descriptors or
    memory is a line a minute (with the count), other errors go to the default handler."""

    def __init__(self) -> None:
        self.log = EveryMinute(self._line)
        self._reason = ""

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc, message = context.get("exception"), str(context.get("message", ""))
        if (
            isinstance(exc, OSError)
            and exc.errno in ACCEPT_OUT_OF_RESOURCES
            and "accept" in message
        ):
            self._reason = exc.strerror or str(exc)
            self.log.happened()
            return
        if isinstance(exc, ValueError) and "_start_serving" in message:
            # the retry asyncio scheduled after such a failure, run after the listening
            # socket was closed (the server stopping meanwhile): nothing to accept any more
            log.debug("accept retried after the listening socket closed: %s", exc)
            return
        loop.default_exception_handler(context)

    def _line(self, count: int) -> str:
        return (
            f"cannot accept connections: {self._reason} ({descriptors_in_use()}); "
            f"{count} attempt(s) failed since the last line; asyncio retries every second"
        )


class GuardedServer(uvicorn.Server):
    """uvicorn's server, with :class:`AcceptFailures` as its loop's exception handler."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(AcceptFailures())
        await super().serve(sockets)
