"""The last run of each job operators schedule (``verify``, ``backup``), whichever process
ran it: a command from cron or a timer, or a job of ``serve``. Kept in the store (the book
``last-run.<job>`` of ``archive_checks``), so the Monitor and ``/metrics`` of every
``serve``, one started later or one running beside the command, show it.

A run is recorded when it ends (finished, or failed with an error); one stopped on request
(Ctrl-C, a stop) is not: the run before it stays the last. Two runs ending at once: the
one that ended last is kept (a run that ended earlier never replaces a later one, by
compare and set).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend

PREFIX = "last-run."
RECORDED = ("verify", "backup")
"""The jobs whose last run the store keeps."""


@dataclass
class LastRun(Jsonable):
    """One ended run: times in milliseconds since the epoch (UTC)."""

    job: str
    started: int
    finished: int
    ok: bool
    message: str = ""
    error: str | None = None
    result: dict[str, Any] = field(default_factory=dict)
    by: str = ""
    """Where it ran: ``cli`` or ``serve``, the host and the process id."""

    @property
    def finished_at(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.finished / 1000, dt.UTC)

    @property
    def started_at(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.started / 1000, dt.UTC)


def here(entry: str) -> str:
    """``cli on host (pid 123)``: who a run of this process is."""
    return f"{entry} on {socket.gethostname()} (pid {os.getpid()})"


class LastRuns:
    """The last run of each of ``RECORDED`` (``Archive.runs``)."""

    def __init__(self, backend: Backend) -> None:
        self._books = CheckBooks(backend)

    def get(self, job: str) -> LastRun | None:
        """The last recorded run of ``job``; None when none was (or its book is damaged)."""
        value = self._books.read(PREFIX + job)
        if value is None:
            return None
        try:
            return LastRun(**value)
        except TypeError:
            return None

    def record(self, run: LastRun) -> None:
        """Keep ``run`` unless a run that ended later is kept already."""
        name = PREFIX + run.job
        mine = run.to_json()
        for _attempt in range(5):
            text = self._books.text(name)
            if text is None:
                if self._books.open(name, mine) is None:
                    return
                continue
            if _finished(text) > run.finished:
                return
            if self._books.turn(name, text, mine):
                return


def _finished(text: str) -> int:
    try:
        return int(json.loads(text)["finished"])
    except (ValueError, KeyError, TypeError):
        return 0  # damaged: replaced
