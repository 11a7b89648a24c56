"""What one sync process has done since it started, and what its loop is doing now.

The counters are kept in memory (the Monitor page and ``/metrics`` read them) and saved
per process after every round (``archive_sync_instances``, for ``sync --status``). The
loop's progress (when the next round starts, the events it left in the workflow's event
log) is in memory only: :func:`activity` says it in words.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.sync.records import TOTALS, InstanceBook, SyncInstance, SyncTotals
from imixs_archive.timezones import now_ms

COUNTERS = TOTALS
REPORTED = (*COUNTERS, "gone", "caught_up")
"""Counters shown (status, monitor, metrics); ``COUNTERS`` are also saved per process."""

FIRST, NEXT, PAUSE = "first", "next", "pause"
"""What the loop waits for (``SyncCounters.waiting``)."""


@dataclass
class SyncCounters(SyncTotals):
    """Counters of one sync process since it started (the metrics endpoint reads them):
    the saved ``SyncTotals``, and more kept in memory."""

    gone: int = 0
    """Events whose snapshot the workflow no longer held (404)."""
    caught_up: int = 0
    """Snapshots the catch-up archived that no event had brought."""
    catchup_point: int = 0
    lag_ms: int = 0
    """Age of the oldest event pending in the workflow's log at the last round."""
    state: str = "starting"
    started: int = field(default_factory=now_ms)
    rounds: int = 0
    next_round: int = 0
    """Epoch ms at which the loop starts its next round (0: a round is running)."""
    waiting: str = ""
    """What the loop waits for: ``FIRST`` round, ``NEXT`` round, end of a ``PAUSE``."""
    pending: int = -1
    """Events the last round left in the workflow's event log (-1: none read yet)."""
    pending_more: bool = False
    """The last round read as many events as it asked for: there may be more."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def as_dict(self) -> dict[str, int | str]:
        with self._lock:
            values: dict[str, int | str] = {name: getattr(self, name) for name in REPORTED}
            values.update(lag_ms=self.lag_ms, state=self.state, started=self.started)
            values.update(catchup_point=self.catchup_point, rounds=self.rounds)
            values.update(next_round=self.next_round, waiting=self.waiting)
            values.update(pending=self.pending, pending_more=int(self.pending_more))
            return values

    def save(self, book: InstanceBook, instance: str) -> None:
        """Record the counters as those of the process ``instance`` (for ``sync --status``)."""
        values = {**self.as_dict(), "instance": instance, "updated": now_ms()}
        book.save(SyncInstance.of(values))

    def wait(self, what: str, millis: float, state: str | None = None) -> None:
        """The loop waits ``millis`` for ``what`` (0: a round starts now)."""
        with self._lock:
            self.waiting = what if millis > 0 else ""
            self.next_round = now_ms() + int(millis) if millis > 0 else 0
            if state is not None:
                self.state = state[:500]

    def round_done(self, left: int, more: bool) -> None:
        with self._lock:
            self.rounds += 1
            self.pending, self.pending_more = left, more


def pending_text(values: Mapping[str, Any]) -> str:
    """The events waiting in the workflow's event log as the last round left them."""
    pending = int(values.get("pending", -1))
    if pending < 0:
        return "not read yet"
    return (
        f"{pending}, perhaps more (the last round read a full batch)"
        if values.get("pending_more")
        else str(pending)
    )


Activity = tuple[str, int | None, str]
"""Words before a number of seconds, the seconds (None: no wait), the words after."""


def activity(values: Mapping[str, Any], initial_delay_ms: int, at: int | None = None) -> Activity:
    """What the loop is doing (``values``: :meth:`SyncCounters.as_dict`), in words around
    the seconds until its next round (a page can count them down)."""
    at = now_ms() if at is None else at
    state = str(values.get("state", ""))
    waiting = str(values.get("waiting", ""))
    seconds = max(0, round((int(values.get("next_round", 0)) - at) / 1000))
    if state == "stopped":
        return "stopped", None, ""
    if waiting == FIRST:
        delay = f"{initial_delay_ms / 1000:g} s"
        return (
            "waiting to start: the first round starts in",
            seconds,
            f"s (WORKFLOW_SYNC_INITIALDELAY is {delay})",
        )
    if waiting == PAUSE:
        return f"{state}; trying again in", seconds, "s"
    if waiting == NEXT:
        pending = pending_text(values)
        return f"between rounds (events pending: {pending}); next round in", seconds, "s"
    if int(values.get("rounds", 0)) == 0 and state == "starting":
        return "starting", None, ""
    return "a round is running", None, ""


def describe(parts: Activity) -> str:
    before, seconds, after = parts
    return before if seconds is None else f"{before} {seconds} {after}"


def seconds(millis: float) -> str:
    return f"{millis / 1000:g} s"


def round_report(read: int, outcomes: Iterable[tuple[str, int]], left: int, more: bool) -> str:
    """A round in words, for the log (``imixs-archive sync`` prints it)."""
    if not read:
        return "no events pending in the workflow's event log"
    done = ", ".join(f"{n} {name}" for name, n in sorted(outcomes) if n)
    after = f"{left} or more" if more else str(left)
    return f"round: {read} events read ({done or 'none handled'}), {after} left in the event log"


def next_round(wait: int) -> str:
    return f"next round in {seconds(wait)}" if wait else "next round now"
