"""What this process found stored lately, trusted for a while without a look-up: the
pieces ``PieceStore`` confirmed and the files ``FileStore`` registered (see there why
that is safe)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

V = TypeVar("V")


class RecentlyConfirmed(Generic[V]):
    """At most ``most`` keys, each with a value, trusted for ``seconds`` after the time
    it was confirmed at (``time.monotonic``); the oldest go first. ``seconds`` 0: nothing
    is kept. Safe to share between threads."""

    def __init__(self, seconds: float, most: int) -> None:
        self.seconds = seconds
        self._most = most
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[V, float]] = OrderedDict()
        """Key -> (value, when it was confirmed), oldest first."""

    def keep(self, items: Iterable[tuple[str, V]], since: float) -> None:
        """These keys (with their values) were confirmed at ``since`` (or later)."""
        if not self.seconds:
            return
        with self._lock:
            for key, value in items:
                self._kept[key] = (value, since)
                self._kept.move_to_end(key)
            while len(self._kept) > self._most:
                self._kept.popitem(last=False)

    def get(self, key: str) -> V | None:
        """The key's value while it is trusted, else None."""
        if not self.seconds:
            return None
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            if time.monotonic() - found[1] < self.seconds:
                return found[0]
            del self._kept[key]
            return None
