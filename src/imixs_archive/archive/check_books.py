"""The books of ``verify`` and the scrub (``archive_checks``): small JSON documents by name,
set whatever they hold or by compare and set, and a lease on top of them.

What each book holds is up to the jobs that stop and go on (``archive/part_runs.py``) and
``archive/scrub.py``; this module only reads and writes them.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_CHECKS
from imixs_archive.timezones import now_ms


class CheckBooks:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def read(self, name: str) -> dict[str, Any] | None:
        """The book as a JSON object; None when it is missing or damaged (begun again)."""
        text = self.text(name)
        try:
            value = json.loads(text) if text is not None else None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def text(self, name: str) -> str | None:
        row = self._backend.get(ARCHIVE_CHECKS, {"name": name})
        return None if row is None else str(row["state"])

    def write(self, name: str, state: dict[str, Any]) -> None:
        self._backend.put(ARCHIVE_CHECKS, [{"name": name, "state": json.dumps(state)}])

    def open(self, name: str, state: dict[str, Any]) -> dict[str, Any]:
        """Write a book unless it is there; what it holds afterwards (this call's state,
        or the one another process wrote first)."""
        text = json.dumps(state)
        found = self._backend.put_if_absent(ARCHIVE_CHECKS, {"name": name, "state": text})
        if found is None:
            return state
        value = json.loads(str(found["state"]))
        return value if isinstance(value, dict) else state

    def turn(self, name: str, expected: str, state: dict[str, Any]) -> bool:
        """Set a book to ``state`` if it holds the text ``expected`` (compare and set)."""
        key = {"name": name}
        return self._backend.replace(ARCHIVE_CHECKS, key, "state", expected, json.dumps(state))

    def drop(self, name: str) -> None:
        self._backend.delete(ARCHIVE_CHECKS, {"name": name})

    def names(self, prefix: str) -> list[str]:
        """The books whose name starts with ``prefix`` (a few: the table is small)."""
        rows = self._backend.scan(ARCHIVE_CHECKS, columns=["name"])
        return sorted(str(row["name"]) for row in rows if str(row["name"]).startswith(prefix))

    # ---- a lease: one process at a time --------------------------------------------------

    def take_lease(self, name: str, holder: str, millis: int) -> str:
        """'' when ``holder`` holds the lease ``name`` for the next ``millis`` now (taken or
        renewed), else who holds it. Set by compare and set, so of two processes asking at
        once one gets it."""
        now = now_ms()
        mine = {"holder": holder, "until": now + millis}
        text = self.text(name)
        if text is None:
            return "" if self.open(name, mine) == mine else "another process"
        try:
            held = json.loads(text)
            other, until = str(held["holder"]), int(held["until"])
        except (ValueError, KeyError, TypeError):
            other, until = "", 0  # damaged: taken over
        if other != holder and until > now and not _gone(other):
            return other
        return "" if self.turn(name, text, mine) else "another process"

    def release_lease(self, name: str, holder: str) -> None:
        text = self.text(name)
        held = self.read(name)
        if text is not None and held is not None and held.get("holder") == holder:
            self.turn(name, text, {"holder": "", "until": 0})


def _gone(holder: str) -> bool:
    """Whether a lease's holder (``user@host:pid:token``, ``Archive``'s) was a process of
    this machine that is gone (killed): its lease is then free at once, not when it runs
    out, so a verify killed and run again goes on straight away."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    if parts[0].rpartition("@")[2] != socket.gethostname():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
