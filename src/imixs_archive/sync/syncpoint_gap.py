"""Where the workflow's syncpoint feed cannot answer: the 16-per-timestamp 500.

``GET /snapshot/syncpoint/{p}`` answers every snapshot sharing the smallest ``$modified``
after ``p``, and **500** when more than 16 share it. Every ``q`` before that timestamp then
answers 500 too, and ``q`` at it answers the next one, so a search over ``q`` finds the
timestamp the feed cannot pass. A passing failure is told from a lasting one by asking
again (``confirm`` times). Used by the sync's catch-up and by ``resync``: both record the
range as skipped (``archive_sync_progress``) and walk on after it.
"""

from __future__ import annotations

import threading

from imixs_archive.timezones import now_ms
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowUnavailableError

GAP_NOTE = "more than 16 snapshots share one $modified: the syncpoint feed fails"


def is_feed_failure(exc: WorkflowUnavailableError) -> bool:
    """A 500 from a workflow that is up: maybe the 16-per-timestamp limit."""
    return not exc.down and exc.status == 500


class GapLocator:
    """Finds the timestamp after a point that the feed cannot answer."""

    def __init__(
        self, client: WorkflowClient, confirm: int = 6, stopping: threading.Event | None = None
    ) -> None:
        self.client = client
        self.confirm = max(1, confirm)
        self.stopping = stopping or threading.Event()

    def answers(self, q: int) -> bool:
        """Does ``syncpoint/{q}`` answer (tried ``confirm`` times: a failure may be a
        passing one)? Raises when the workflow is down."""
        for _ in range(self.confirm):
            if self.stopping.is_set():
                raise WorkflowUnavailableError("stopped while locating a syncpoint failure", 500)
            try:
                with self.client.stream_syncpoint(q) as blocks:
                    for _block in blocks:
                        pass
                return True
            except WorkflowUnavailableError as exc:
                if exc.down:
                    raise
        return False

    def locate(self, point: int) -> int:
        """The smallest ``q`` after ``point`` that answers: the timestamp the feed cannot
        pass. No ``q`` up to the present answers: the workflow is failing,
        ``WorkflowUnavailableError``."""
        low, step = point, 1
        high = point + step
        while not self.answers(high):
            low = high
            step *= 2
            if high > now_ms() + 60_000:
                raise WorkflowUnavailableError(
                    f"GET snapshot/syncpoint: HTTP 500 for every point after {point}", 500
                )
            high = point + step
        while high - low > 1:
            middle = (low + high) // 2
            if self.answers(middle):
                high = middle
            else:
                low = middle
        return high
