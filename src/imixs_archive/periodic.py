"""Work that ``serve`` runs again and again on a thread of its own (the collector, retention,
the FTPS backup of events): one way to start it, pace it and stop it. Intervals are seconds
here; settings given in milliseconds are converted where they are read."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Periodic:
    """``work`` every ``every`` seconds on a daemon thread: the first run ``every`` seconds
    after :meth:`start` (``at_once``: right away), then one ``every`` after the end of the
    previous, until :meth:`close`. An exception of a run goes to ``on_error`` and the next
    run tries again: the process stays up. ``stop`` is set when it is closing: long work
    looks at it to end early."""

    def __init__(
        self,
        name: str,
        every: float,
        work: Callable[[], None],
        *,
        on_error: Callable[[Exception], None] | None = None,
        at_once: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        self.name = name
        self.every = every
        self.runs: int = 0
        self.stop = stop or threading.Event()
        self._work = work
        self._on_error = on_error
        self._at_once = at_once
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def run(self) -> None:
        """The loop, in the calling thread (until ``stop`` is set)."""
        self._loop()

    def _loop(self) -> None:
        if not self._at_once and self.stop.wait(self.every):
            return
        while True:
            try:
                self._work()
            except Exception as exc:
                if self._on_error is None:
                    raise
                self._on_error(exc)
            self.runs += 1
            if self.stop.wait(self.every):
                return

    def close(self, timeout: float = 30.0) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
