"""What one request may cost: a time budget, cancellation when the client leaves, and a
liveness check that sees worker threads that no longer free up.

``RequestBudget`` gives every HTTP request a :class:`~imixs_archive.budget.Budget`. It
reads the client's messages itself (passing them on one at a time, so an upload keeps its
back-pressure), which lets it notice a disconnect while the handler still works and cancel
the budget: the loops that call ``checkpoint()`` then stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imixs_archive.budget import Budget, within
from imixs_archive.web.http_middleware import HttpMiddleware


class RequestBudget(HttpMiddleware):
    """Each request runs under a budget of ``seconds`` (None or 0: only cancellation)."""

    def __init__(self, app: ASGIApp, seconds: float | None) -> None:
        super().__init__(app)
        self.seconds = seconds

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        budget = Budget(self.seconds)
        inbox: asyncio.Queue[Message] = asyncio.Queue(maxsize=1)

        async def pump() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    budget.cancel("the client went away")
                await inbox.put(message)
                if message["type"] == "http.disconnect":
                    return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                budget.answered()
            await send(message)

        reader = asyncio.create_task(pump())
        try:
            with within(budget):
                await self.app(scope, inbox.get, sending)
        finally:
            budget.cancel("the request ended")  # e.g. cancelled at shutdown: its threads stop
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


async def workers_free(timeout: float) -> float | None:
    """Seconds a worker thread took to run a no-op, or None when none freed up within
    ``timeout``: every sync handler and streamed answer waits for one, so a service whose
    workers are all stuck cannot answer anything but this probe."""
    start = time.perf_counter()
    try:
        await asyncio.wait_for(anyio.to_thread.run_sync(_noop, abandon_on_cancel=True), timeout)
    except TimeoutError:
        return None
    return time.perf_counter() - start


def _noop() -> None:
    return None
